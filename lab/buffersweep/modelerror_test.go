package buffersweep

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// modelPoint is one cell of a sweep: the path model's capacity of it,
// predicted again here from the configuration its session recorded
// (environment.json's socket buffer settings, the cell's route, size and
// slow client), and the capacity its hop samples measured.
type modelPoint struct {
	name      string
	size      int64
	predicted pathmodel.Capacity
	// measured is sweep.csv's capacity: per download the most in flight
	// at a sample (app_written - client_read), the median over downloads.
	// The samples' skew can only raise it.
	measured float64
	// certain is the same, each sample's in flight less its sample_skew
	// (how far the sockets moved while it was taken): the most the
	// download surely had in flight. On a loaded machine a sample's skew
	// reached 10 MiB; one with 4.8 MiB measured 2.2 MiB in flight where
	// the send queue held 0.8.
	certain float64
	at      string // the hops at the sample of the most in flight
}

// errs are the point's errors against a prediction c: the measured
// capacity against c's Total, the least the model says the path holds
// (lo), and the surely measured one against c's Most, the most it can
// hold (hi), each relative to the prediction.
func (p modelPoint) errs(c pathmodel.Capacity) (lo, hi float64) {
	return (p.measured - float64(c.Total())) / float64(c.Total()), (p.certain - float64(c.Most())) / float64(c.Most())
}

// modelPoints predicts each cell's capacity from its session's recorded
// configuration, checks it is the prediction sweep.csv has (made before
// the run), and pairs it with the measured capacity. Every cell must be
// one whose path filled: a response at least 1.5 times the prediction
// (a smaller one caps what can be in flight at its size).
func modelPoints(t *testing.T, c *Config, out string, cells []Cell) []modelPoint {
	t.Helper()
	var points []modelPoint
	for _, cell := range cells {
		dir := out
		for _, k := range c.kernels() {
			if k.Label() == cell.Kernel && !k.host {
				dir = filepath.Join(out, k.dir())
			}
		}
		sessions, err := recorder.ReadEnvironment(dir)
		if err != nil || len(sessions) == 0 {
			t.Fatalf("%s: the session's environment: %v", cell.Kernel, err)
		}
		var model pathmodel.Config
		if err := pathmodel.NetConfig(sessions[0].Net, &model); err != nil {
			t.Fatalf("%s: %v", cell.Kernel, err)
		}
		predicted, err := c.predictRoutes(c.slowClient(cell.SizeBytes, cell.RateBps), model)
		if err != nil {
			t.Fatal(err)
		}
		p := modelPoint{name: fmt.Sprintf("%s %s %s at %s/s", cell.Kernel, cell.Route, fmtSize(cell.SizeBytes), fmtSize(cell.RateBps)),
			size: cell.SizeBytes, predicted: predicted[stack.Route(cell.Route)], measured: cell.CapacityMeasuredBytes.Value}
		p.certain, p.at = inFlight(t, filepath.Join(out, cell.Dir), cell.Route)
		switch total := p.predicted.Total(); {
		case cell.CapacityPredictedBytes != recorder.Some(float64(total)):
			t.Fatalf("%s: sweep.csv predicted %v, the recorded configuration %d (%s)", p.name, cell.CapacityPredictedBytes, total, p.predicted)
		case !cell.CapacityMeasuredBytes.Valid:
			t.Fatalf("%s: no measured capacity", p.name)
		case float64(p.size) < 1.5*float64(total):
			t.Errorf("%s: a %s response through a path predicted to hold %s: want one at least 1.5 times the prediction", p.name,
				fmtSize(p.size), fmtSize(total))
		}
		points = append(points, p)
	}
	return points
}

// outside is how far errors lo and hi lie outside the model's bounds (0
// within): lo below -pathmodel.MaxUnder, hi above pathmodel.MaxOver.
func outside(lo, hi float64) float64 {
	return max(0, -lo-pathmodel.MaxUnder, hi-pathmodel.MaxOver)
}

// worstErr is the point furthest outside the bounds against the
// capacity predict gives it, and how far.
func worstErr(points []modelPoint, predict func(pathmodel.Capacity) pathmodel.Capacity) (float64, string) {
	worst, at := -1.0, ""
	for _, p := range points {
		if o := outside(p.errs(predict(p.predicted))); o > worst {
			worst, at = o, p.name
		}
	}
	return worst, at
}

// checkModelError bounds the model's error at every point: the measured
// capacity at least (1 - pathmodel.MaxUnder) times the prediction, the
// surely measured one at most (1 + pathmodel.MaxOver) times the most the
// model says the path can hold; each point logged. It checks the bounds
// catch a corrupted model (a mutation): the app's send buffer dropped or
// doubled, the proxy's send buffer tripled (doubled, it is off by 29-40%
// at its worst point, too near the bound to be caught every run).
func checkModelError(t *testing.T, points []modelPoint) {
	t.Helper()
	bounds := fmt.Sprintf("-%.0f%% of the prediction to +%.0f%% of its most", 100*pathmodel.MaxUnder, 100*pathmodel.MaxOver)
	proxied := false
	for _, p := range points {
		lo, hi := p.errs(p.predicted)
		line := fmt.Sprintf("%s: predicted %.2f MiB (%s), most %.2f MiB; measured %.2f MiB (%s), surely %.2f MiB; error %+.1f%%, %+.1f%% of the most",
			p.name, float64(p.predicted.Total())/(1<<20), p.predicted, float64(p.predicted.Most())/(1<<20), p.measured/(1<<20), p.at,
			p.certain/(1<<20), 100*lo, 100*hi)
		if outside(lo, hi) > 0 {
			t.Errorf("%s: outside the model's bounds, %s", line, bounds)
		} else {
			t.Log(line)
		}
		proxied = proxied || p.predicted.ProxySend > 0
	}
	for _, m := range []struct {
		name   string
		change func(pathmodel.Capacity) pathmodel.Capacity
		skip   bool
	}{
		{"the app's send buffer dropped", func(c pathmodel.Capacity) pathmodel.Capacity { c.AppSend = 0; return c }, false},
		{"the app's send buffer doubled", func(c pathmodel.Capacity) pathmodel.Capacity { c.AppSend *= 2; return c }, false},
		{"the proxy's send buffer tripled", func(c pathmodel.Capacity) pathmodel.Capacity { c.ProxySend *= 3; return c }, !proxied},
	} {
		if o, at := worstErr(points, m.change); !m.skip && o == 0 {
			t.Errorf("a model with %s is within the bounds, %s (%s): the check cannot catch it", m.name, bounds, at)
		}
	}
}

// modelSweeps are the sweeps the model's error is measured over: the
// direct and buffering-off routes under the host's socket buffers
// (16 MiB read at 2 MiB/s: the settings assess predicts a managed stack
// from) and, each in a namespace of its own, under tcp_wmem maxima of 1
// MiB (8 MiB at 4 MiB/s) and 4 MiB (16 MiB at 4 MiB/s); and the direct
// route under 16 MiB (32 MiB at 4 MiB/s), the boundary of assess's
// default 16 MiB response. Each point's response is at least 1.5 times
// its predicted capacity, so the path fills (modelPoints checks). The
// 1 and 4 MiB namespaces read no more than that needs (3.7 and 2 times
// the buffering-off prediction), not the 24 MiB both once read; 16 MiB
// keeps 32 (26 MiB, 1.6 times, measured -34%: autotuning grows that send
// buffer while it stays full, near MaxUnder).
func modelSweeps() []*Config {
	both := []stack.Route{stack.RouteDirect, stack.RouteBufferingOff}
	host := Published()
	host.Routes, host.Sizes, host.Rates = both, []lab.Size{16 << 20}, []lab.Size{2 << 20}
	sweeps := []*Config{host}
	for _, k := range []struct{ wmem, size lab.Size }{{1 << 20, 8 << 20}, {4 << 20, 16 << 20}} {
		ns := Published()
		ns.Routes, ns.Sizes, ns.Rates = both, []lab.Size{k.size}, []lab.Size{4 << 20}
		ns.TCPWmemMax = []lab.Size{k.wmem}
		sweeps = append(sweeps, ns)
	}
	big := Published()
	big.Routes, big.Sizes, big.Rates = []stack.Route{stack.RouteDirect}, []lab.Size{32 << 20}, []lab.Size{4 << 20}
	big.TCPWmemMax = []lab.Size{16 << 20}
	return append(sweeps, big)
}

// testModelError runs modelSweeps on stackName and bounds the model's
// error over them.
func testModelError(t *testing.T, stackName string) {
	var points []modelPoint
	for _, c := range modelSweeps() {
		env, cells := sweep(t, c, stackName)
		points = append(points, modelPoints(t, c, env.Out, cells)...)
	}
	checkModelError(t, points)
}

// TestModelErrorEmbedded measures the path model's error on the embedded
// stack: for each point of modelSweeps, the capacity the model predicts
// from the configuration alone against the most bytes the hop samples saw
// in flight, within pathmodel.MaxUnder below the prediction and
// pathmodel.MaxOver above the most it says the path can hold.
func TestModelErrorEmbedded(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	testModelError(t, stack.NameEmbedded)
}

// TestModelErrorReal is TestModelErrorEmbedded on Gunicorn sync-2 and
// NGINX.
func TestModelErrorReal(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireRoot(t, "network namespaces for tcp_wmem")
	testModelError(t, stack.NameReal)
}

// inFlight reads route's downloads in dir's hops.csv: per download the
// most it surely had in flight at a sample (app_written - client_read -
// sample_skew), the median over downloads; and where its bytes were, hop
// by hop, at the sample with the most in flight, skew or not.
func inFlight(t *testing.T, dir, route string) (float64, string) {
	t.Helper()
	rows, err := recorder.ReadFile[recorder.Hop](filepath.Join(dir, "hops.csv"))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		run string
		d   int
		ts  float64
	}
	at := map[key]map[string]int64{}
	for _, r := range rows {
		if !strings.HasPrefix(r.RunID, route+".") || r.Source == recorder.HopSourceMissing {
			continue
		}
		k := key{r.RunID, r.Download, r.TS}
		if at[k] == nil {
			at[k] = map[string]int64{}
		}
		at[k][r.Hop] = r.Bytes
	}
	type dl struct {
		run string
		d   int
	}
	surely := map[dl]int64{}
	var most int64 = -1
	var hops map[string]int64
	for k, h := range at {
		w, okW := h[recorder.HopAppWritten]
		r, okR := h[recorder.HopClientRead]
		if !okW || !okR {
			continue
		}
		if w-r > most {
			most, hops = w-r, h
		}
		if d := (dl{k.run, k.d}); w-r-h[recorder.HopSampleSkew] > surely[d] {
			surely[d] = w - r - h[recorder.HopSampleSkew]
		}
	}
	var per []recorder.Maybe
	for _, v := range surely {
		per = append(per, recorder.Some(float64(v)))
	}
	var parts []string
	for _, hop := range append(slices.Clone(recorder.HopsInTransit), recorder.HopUnaccounted, recorder.HopSampleSkew) {
		if v := hops[hop]; v != 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", hop, float64(v)/(1<<20)))
		}
	}
	return median(per).Value, strings.Join(parts, ", ")
}
