package h2slowclient

import (
	"context"
	"sync"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// runFastH3 is lab.FastSpec.RunH2 over HTTP/3: f's open-loop schedule as
// streams on the HTTP/3 connection c (loadgen.OpenLoop.H3), which the
// caller opened and closes, each request's row (protocol HTTP/3) written
// to w as it finishes and env.RequestDone told.
func runFastH3(ctx context.Context, f lab.FastSpec, env *lab.Env, c *loadgen.H3Conn, url string, meta recorder.RunMeta, t0 time.Time,
	w *recorder.FileWriter[recorder.Request]) lab.FastRun {
	var out lab.FastRun
	var mu sync.Mutex
	loop := loadgen.OpenLoop{H3: c, URL: url, Pacer: loadgen.ConstantPacer{Interval: time.Duration(float64(time.Second) / f.Rate), Duration: time.Duration(f.Duration)},
		Start: t0.Add(time.Duration(f.Offset)), RunID: meta.RunID, Role: loadgen.RoleFast, Metrics: env.Metrics}
	loop.OnResult = func(r loadgen.Result) {
		row := loadgen.RequestRow(meta, t0, r)
		mu.Lock()
		defer mu.Unlock()
		out.Reqs = append(out.Reqs, row)
		if err := w.Write(row); err != nil && out.WriteErr == nil {
			out.WriteErr = err
		}
		env.RequestDone(meta.RunID)
	}
	out.Planned = loop.Planned()
	loop.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	return out
}
