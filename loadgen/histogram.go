package loadgen

import "github.com/slowlab/slowlab/recorder"

// durationHist is the summary's bounded histogram (recorder.DurationHist,
// which long-poll's probe summary shares).
type durationHist = recorder.DurationHist
