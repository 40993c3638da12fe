package loadgendir

import "github.com/slowlab/slowlab/lab"

// init adds the load generator's report section to lab's, after the
// experiments': `slowlab report DIR` draws a loadgen or merged directory
// with it.
func init() { lab.RegisterSection(Section) }
