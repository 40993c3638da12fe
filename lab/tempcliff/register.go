package tempcliff

import (
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/recorder"
)

// External is why temp-cliff (and temp-disk-full, on its configuration)
// cannot run on stack: external.
const External = "starts its own stack (its conditions set the proxy's proxy_max_temp_file_size and temp dir)"

// init registers the experiment: its flags and scenario (New), its
// table (NewResult), its results files, its smoke reduction and its
// report section.
func init() {
	lab.Register(lab.Experiment{Name: Name, Order: 9, New: func() lab.Config { return Published() }, NewResult: func() lab.Result { return new(Result) }, Report: Section,
		Files: ResultsFiles, Smoke: Smoke,
		Summary:  "slow readers of responses below and above the proxy's proxy_max_temp_file_size, and with 0 (memory buffers only)",
		Shared:   lab.SharedStackRun,
		External: External})
}

// ResultsFiles are the files each session of temp-cliff, or of
// temp-disk-full, writes (lab.Experiment.Files).
var ResultsFiles = []string{downloadFile, runFile,
	recorder.FileName[recorder.Request](), recorder.FileName[recorder.ResourceSample]()}

// Smoke implements lab.Experiment.Smoke for temp-cliff and temp-disk-full:
// one repetition of the first condition with 2 MiB responses read at
// 8 MiB/s; a temp dir on a tmpfs needs root (a mount namespace).
func Smoke(cfg lab.Config) (root string) {
	c := cfg.(*Config)
	c.Reps, c.Conditions = 1, c.Conditions[:1]
	for i := range c.Conditions {
		c.Conditions[i].Size = 2 << 20
		if c.Conditions[i].TempTmpfs != 0 {
			root = "the proxy's mount namespace"
		}
	}
	c.SlowReader.ReadRate, c.Fast.Duration = 8<<20, lab.Duration(time.Second)
	return root
}
