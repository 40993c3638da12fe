package slowclient

import (
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// tables holds the open CSV writers of one results directory: the shared
// run files (lab.RunFiles, large-responses.csv its items) and hops.csv.
type tables struct {
	*lab.RunFiles[recorder.LargeResponse, recorder.Run]
	hops   *recorder.FileWriter[recorder.Hop]
	jitter recorder.Jitter // resource sampling lateness over all runs
}
