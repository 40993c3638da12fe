package slowclient

import (
	"context"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// appSendWait bounds how long the lab waits, after the downloads ended,
// for the app's record of a download the client completed: the app writes
// it right after its last write, which can reach the client first.
var appSendWait = 10 * time.Second

// appSendTimes returns the app's send times by request id once every
// download in ids that the client completed has one, or appSendWait has
// passed (those without stay missing: the app did not finish them).
func appSendTimes(ctx context.Context, running *stack.Running, ids []string) (map[string]float64, error) {
	if _, ext := running.External(); ext {
		return map[string]float64{}, nil // the user's app keeps no send log of ours
	}
	deadline := time.Now().Add(appSendWait)
	for {
		sends, err := running.AppSend(ctx)
		if err != nil {
			return nil, err
		}
		missing := 0
		for _, id := range ids {
			if _, ok := sends[id]; !ok {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return sends, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// incompleteDownloads says which downloads of a run were not complete, or
// "" when all were.
func incompleteDownloads(larges []recorder.LargeResponse) string {
	var first recorder.LargeResponse
	n := 0
	for _, l := range larges {
		if l.Outcome != recorder.DownloadComplete {
			if n == 0 {
				first = l
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d downloads incomplete (client %d: %s: %s); left out of app_send_s and client_receive_s",
		n, len(larges), first.Client, first.Outcome, first.Error)
}
