package report

import (
	"path/filepath"

	"github.com/slowlab/slowlab/recorder"
)

// The websocket results files: the run summaries mark the directory.
var wsRunsFile = recorder.FileName[recorder.WSRun]()

// WebSocket is the websocket section, which websocket's registration in
// lab carries.
var WebSocket = Section{Name: "websocket", Marker: wsRunsFile, build: buildWebSocket}

func buildWebSocket(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.WSRun](filepath.Join(dir, wsRunsFile))
	if err != nil {
		return nil, err
	}
	s := &section{id: "websocket", title: "websocket",
		intro: "WebSocket clients each hold an echoing socket, idle, while /fast runs on its open-loop schedule. A socket holds " +
			"whatever serves it for its whole life: a sync worker, a thread, or nothing but memory on an event loop; through a " +
			"proxy it is a tunnel with its own upstream connection. An app that cannot hold one (a WSGI app on Gunicorn) refuses " +
			"the upgrade."}
	t := &table{Caption: "websocket conditions (" + wsRunsFile + "), over the ok runs: sockets opened, held to the end of their " +
		"hold and refused, the most the app held at once and the workers holding them, and /fast; the app's memory and OOM kills over every run.",
		Head: []string{"route", "server", "mode", "queue", "sockets", "ping (s)", "proxy_read_timeout (s)", "runs", "excluded", "opened", "held", "refused",
			"lifetime p50 (s)", "app held", "workers holding",
			"workers", "messages", "delay p95 (ms)", "app memory peak (MiB)", "app RSS peak (MiB)", "OOM kills", "/fast ok", "/fast planned", "/fast p50 (ms)", "/fast p95 (ms)"}}
	count := func(v float64) cell { return num(v, 0) }
	mib1 := func(v float64) cell { return num(v, 1) }
	for _, c := range recorder.SummarizeWSConditions(runs) {
		t.Rows = append(t.Rows, []cell{text(c.Route), text(c.Server), text(c.Mode), text(c.Queue), integer(c.Sockets), num(c.PingS, 1), num(c.ReadTimeoutS, 0),
			integer(c.Runs), integer(c.Excluded), integer(c.Opened), integer(c.Held), integer(c.Refused),
			maybe(c.LifetimeP50S, func(v float64) cell { return num(v, 2) }), maybe(c.HeldMax, count), maybe(c.WorkersHoldingMax, count),
			maybe(c.Workers, count), integer(c.Messages), maybe(c.DelayP95MS, ms), maybe(c.AppMemPeakMiB, mib1), maybe(c.AppRSSPeakMiB, mib1),
			integer(c.AppOOMKills), integer(c.FastOK), integer(c.FastPlanned), maybe(c.P50MS, ms), maybe(c.P95MS, ms)})
	}
	s.addTable(t)
	return s, nil
}
