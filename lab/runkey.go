package lab

import "github.com/slowlab/slowlab/recorder"

// The columns that lead the rows of the experiments whose run is "n
// clients beside /fast" (slow-upload, stalled-reader, sse, websocket,
// idle-connections), declared once: structs a row embeds where these
// columns go (recorder.Tagged flattens them), the clients column renamed
// for what the experiment's clients are.

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
