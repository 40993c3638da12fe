package assess

import "github.com/slowlab/slowlab/lab"

// init adds the assessment's report section to lab's, after the
// experiments': `slowlab report DIR` and the report `slowlab assess`
// writes draw an assessment.json with it.
func init() { lab.RegisterSection(Section) }
