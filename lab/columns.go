package lab

import (
	"time"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// The columns the rows of the experiments whose run is "n clients beside
// /fast" (slow-upload, stalled-reader, sse, websocket, idle-connections)
// share, declared once: the key columns that lead their rows, structs a
// row embeds where they go (recorder.Tagged flattens them) with the
// clients column renamed for what the experiment's clients are; and the
// values their columns compute alike (Capacity, MiB, SetSeconds).

// RunKey are a run's leading columns: the run, its route and server, how
// many clients it ran and its repetition. A row embeds it with a csv tag
// naming the clients column for what they are, as slow-upload's rows do
// with `csv:"clients=uploaders"`.
type RunKey struct {
	RunID   string `csv:"run_id"`
	Route   string `csv:"route"`
	Server  string `csv:"server"`
	Clients int    `csv:"clients"`
	Rep     int    `csv:"rep"`
}

// Meta is the run as its /fast requests' recorder.RunMeta (RunClients):
// its clients are the slow clients.
func (k RunKey) Meta() recorder.RunMeta {
	return recorder.RunMeta{RunID: k.RunID, Route: k.Route, Server: k.Server, SlowClients: k.Clients, Rep: k.Rep}
}

// ClientKey are the leading columns of a client's row: its run's
// (RunKey) and the client's number in the run.
type ClientKey struct {
	RunKey
	Client int `csv:"client"`
}

// Capacity is server s's workers and slots (workers x threads; none for
// an event loop), as the rows' recorder.Holding columns say them.
func Capacity(s stack.Server) (workers, slots recorder.Maybe) {
	workers = recorder.Some(float64(max(s.Workers, 1)))
	if info, ok := s.ModelInfo(); ok && info.Async {
		return workers, recorder.Maybe{}
	}
	return workers, recorder.Some(float64(max(s.Workers, 1) * max(s.Threads, 1)))
}

// MiB is a byte count in MiB, none where b is none.
func MiB(b recorder.Maybe) recorder.Maybe {
	if !b.Valid {
		return b
	}
	return recorder.Some(b.Value / (1 << 20))
}

// SetSeconds is a setting's column in seconds (an app or proxy timeout
// the run set), none where d is 0: the component's default.
func SetSeconds(d Duration) recorder.Maybe {
	if d == 0 {
		return recorder.Maybe{}
	}
	return recorder.Some(time.Duration(d).Seconds())
}
