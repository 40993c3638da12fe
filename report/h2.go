package report

import (
	"path/filepath"

	"github.com/slowlab/slowlab/recorder"
)

// The h2-slow-client results files: the run summaries mark the directory.
var h2RunsFile = recorder.FileName[recorder.H2Run]()

// H2SlowClient is the h2-slow-client section, which its registration in
// lab carries.
var H2SlowClient = Section{Name: "h2-slow-client", Marker: h2RunsFile, build: buildH2SlowClient}

func buildH2SlowClient(dir string) (*section, error) {
	runs, err := recorder.ReadFile[recorder.H2Run](filepath.Join(dir, h2RunsFile))
	if err != nil {
		return nil, err
	}
	s := &section{id: "h2-slow-client", title: "h2-slow-client",
		intro: "Slow readers over HTTP/2 read /large through the proxy, slow by flow control (each stream's window), while /fast runs " +
			"on its open-loop schedule over HTTP/2, on its own connection or on the slow streams' first. The proxy speaks HTTP/1.1 to " +
			"the app with one upstream connection per stream: with buffering off each slow stream holds an app worker, so one " +
			"connection's streams can hold them all."}
	t := &table{Caption: "h2-slow-client conditions (" + h2RunsFile + "), over the ok runs: the streams' outcomes, the most slow " +
		"responses the app was writing at once against its workers, what it handed over whole, the proxy's memory and temp files, and /fast.",
		Head: []string{"route", "server", "streams", "conns", "/fast connection", "read", "connection window", "runs", "excluded", "complete", "cut", "reset", "reset after (s)", "failed",
			"workers", "app held", "app complete", "proxy memory peak (MiB)", "temp peak (MiB)", "/fast ok", "/fast planned", "/fast p50 (ms)", "/fast p95 (ms)"}}
	count := func(v float64) Cell { return Fixed(v, 0) }
	mib1 := func(v float64) Cell { return Fixed(v, 1) }
	for _, c := range recorder.SummarizeH2Conditions(runs) {
		t.Rows = append(t.Rows, []Cell{Text(c.Route), Text(c.Server), Int(c.Streams), Int(c.Conns), Text(c.FastConn), Text(c.Read), Int(int(c.ConnWindow)),
			Int(c.Runs), Int(c.Excluded), Int(c.Complete), Int(c.Cut), Int(c.Reset), Opt(c.ResetAfterS, func(v float64) Cell { return Fixed(v, 2) }), Int(c.Failed), Opt(c.Workers, count),
			Opt(c.AppHeldMax, count), Int(c.AppComplete), Opt(c.ProxyMemPeakMiB, mib1), Opt(c.TempPeakMiB, mib1),
			Int(c.FastOK), Int(c.FastPlanned), Opt(c.P50MS, Sig), Opt(c.P95MS, Sig)})
	}
	s.addTable(t)
	return s, nil
}
