package h2slowclient

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/labtest"
	"github.com/slowlab/slowlab/internal/slowlabtest"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
)

// TestH3Shape is the HTTP/3 column on the embedded proxy (its TLS routes,
// QUIC on their port): eight paced streams on one HTTP/3 connection hold
// min(8, 2) = both sync-2 workers with buffering off, none handed over,
// and /fast on its own HTTP/3 connection waits seconds; with buffering on
// the proxy takes four responses whole and /fast is not starved; two
// streams stalled with their windows closed hold both workers and are
// reset by the proxy once its 1 s send_timeout passed, before the hold's
// end. /fast's requests are streams of one HTTP/3 connection a run.
func TestH3Shape(t *testing.T) {
	slowlabtest.Timing(t)
	send := lab.Duration(time.Second)
	c := shortConfig(Condition{Route: stack.RouteH2TLSBufferingOff, Server: "sync-2", Streams: 8, Protocol: ProtocolH3},
		Condition{Route: stack.RouteH2TLSBufferingOn, Server: "sync-2", Streams: 4, Protocol: ProtocolH3},
		Condition{Route: stack.RouteH2TLSBufferingOff, Server: "sync-2", Streams: 2, Read: ReadStall, SendTimeout: send, Protocol: ProtocolH3})
	conds, env := runConditions(t, stack.NameEmbedded, c)
	off, on, stall := conds[0], conds[1], conds[2]
	if off.Protocol != ProtocolH3 || off.Runs != 1 || off.AppHeldMax.Value != 2 || off.AppComplete != 0 || off.P95MS.Value < 1000 {
		t.Errorf("h3, buffering off: %+v, want both workers held by the streams of one HTTP/3 connection (app held 2, none handed over) and /fast starved", off)
	}
	if on.Runs != 1 || on.AppComplete != 4 || on.P95MS.Value >= 1000 {
		t.Errorf("h3, buffering on: %+v, want all 4 responses handed over to the proxy and /fast not starved", on)
	}
	if stall.Runs != 1 || stall.Reset != 2 || stall.AppHeldMax.Value != 2 || stall.ResetAfterS.Value < 1 || stall.ResetAfterS.Value >= c.Hold().Seconds() {
		t.Errorf("h3, stalled: %+v, want both streams holding both workers, then reset by the proxy after its 1 s send_timeout, before the hold's end", stall)
	}
	checkFastStreams(t, env.Out, "HTTP/3", 4, 0)
}

// TestH3ShapeCaddy is the HTTP/3 column through Caddy (caddy-tls,
// protocols h1 h2 h3): it streams responses, so eight paced streams on
// one HTTP/3 connection hold both sync-2 workers and /fast waits; it has
// no send_timeout (the lab runs Caddy at its defaults), so two stalled
// streams hold both workers until the client cuts them at the hold's
// end.
func TestH3ShapeCaddy(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.RequireTool(t, "caddy")
	c := shortConfig(Condition{Route: stack.RouteCaddyTLS, Server: "sync-2", Streams: 8, Protocol: ProtocolH3},
		Condition{Route: stack.RouteCaddyTLS, Server: "sync-2", Streams: 2, Read: ReadStall, Protocol: ProtocolH3})
	conds, env := runConditions(t, "gunicorn+caddy", c)
	paced, stall := conds[0], conds[1]
	if paced.Runs != 1 || paced.AppHeldMax.Value != 2 || paced.AppComplete != 0 || paced.P95MS.Value < 1000 {
		t.Errorf("caddy h3, paced: %+v, want both workers held by the streams and /fast starved", paced)
	}
	if stall.Runs != 1 || stall.Cut != 2 || stall.Reset != 0 || stall.AppHeldMax.Value != 2 {
		t.Errorf("caddy h3, stalled: %+v, want both workers held until the client cut both streams at the hold's end (no reset)", stall)
	}
	checkFastStreams(t, env.Out, "HTTP/3", 4, 0)
}

// The HTTP/3 conditions are skipped, each named, on a stack whose proxy
// does not serve HTTP/3, and run where it does.
func TestH3SkippedWithoutHTTP3(t *testing.T) {
	c := Published()
	h3 := 0
	for _, cond := range c.Conditions {
		if cond.Protocol == ProtocolH3 {
			h3++
		}
	}
	for _, tc := range []struct {
		name    string
		skipped int
	}{{stack.NameEmbedded, 0}, {"gunicorn+nginx", h3}} {
		st, _, err := stack.Lookup(tc.name)
		if err != nil {
			t.Skipf("%s: %v", tc.name, err)
		}
		runs, skipped := c.runsOn(st)
		if len(skipped) != tc.skipped || len(runs) != len(c.Runs())-tc.skipped*c.Reps {
			t.Errorf("%s: %d runs, skipped %q; want %d of %d conditions skipped", tc.name, len(runs), skipped, tc.skipped, len(c.Conditions))
		}
		for _, s := range skipped {
			if !strings.Contains(s, "HTTP/3: the gunicorn+nginx stack's proxy (nginx) does not serve it") {
				t.Errorf("skipped %q: want the proxy named", s)
			}
		}
	}
}

// runConditions runs c on the stack named, and returns its conditions,
// one each, logged, and the session's environment.
func runConditions(t *testing.T, stackName string, c *Config) ([]Summary, *lab.Env) {
	t.Helper()
	env := labtest.Env(t, stackName)
	res, err := c.Run(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	conds := Summarize(res.(*Result).Runs)
	if len(conds) != len(c.Conditions) {
		t.Fatalf("%d conditions, want %d: %+v", len(conds), len(c.Conditions), conds)
	}
	for _, cond := range conds {
		t.Logf("%s %s ×%d %s: app held %v, handed over %d whole, complete %d, cut %d, reset %d after %v s; proxy memory %v MiB; /fast %d/%d p95 %v ms",
			cond.Route, cond.Protocol, cond.Streams, cond.Read, cond.AppHeldMax, cond.AppComplete, cond.Complete, cond.Cut, cond.Reset, cond.ResetAfterS,
			cond.ProxyMemPeakMiB, cond.FastOK, cond.FastPlanned, cond.P95MS)
	}
	return conds, env
}
