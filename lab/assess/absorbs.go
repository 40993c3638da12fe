package assess

import (
	"fmt"

	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/recorder"
)

// absorbsNote says a for the verdict's notes, with the model's measured
// error the verdict allowed for.
func absorbsNote(a Absorbs) string {
	lo, hi := bounds(a)
	switch verdictOf(a) {
	case AbsorbsFits:
		return fmt.Sprintf("the %s response fits in what the path holds (predicted %s; at least %s within the model's measured error of -%s): "+
			"a reader cannot hold a worker at this size; responses over %s can, and between %s and %s the model cannot tell",
			mibs(float64(a.ResponseBytes)), a.Hops, mibs(lo), pct(a.MarginUnder), mibs(hi), mibs(lo), mibs(hi))
	case AbsorbsUncertain:
		return fmt.Sprintf("the %s response is within the model's measured error (-%s, +%s) of what the path holds (predicted %s; %s to %s): "+
			"the model cannot tell whether a reader can hold a worker at this size",
			mibs(float64(a.ResponseBytes)), pct(a.MarginUnder), pct(a.MarginOver), a.Hops, mibs(lo), mibs(hi))
	}
	return fmt.Sprintf("the path holds %s of the %s response (predicted %s; at most %s within the model's measured error of +%s): "+
		"the rest holds the app's send until the reader takes it",
		mibs(float64(a.PredictedBytes)), mibs(float64(a.ResponseBytes)), a.Hops, mibs(hi), pct(a.MarginOver))
}

// bounds are the least and the most bytes the path holds: the
// prediction and the most its buffers can grow to, widened by the
// margins a recorded (pathmodel.Bounds).
func bounds(a Absorbs) (lo, hi float64) {
	most := a.PredictedMostBytes
	if most == 0 { // recorded before it
		most = a.PredictedBytes
	}
	return pathmodel.Bounds(a.PredictedBytes, most, a.MarginUnder, a.MarginOver)
}

// verdictOf is a's verdict; a recorded before verdicts, by Fits.
func verdictOf(a Absorbs) string {
	switch {
	case a.Verdict != "":
		return a.Verdict
	case a.Fits:
		return AbsorbsFits
	}
	return AbsorbsHolds
}

func pct(f float64) string { return fmt.Sprintf("%.0f%%", 100*f) }

// judge is pathmodel's judgement of what path p holds of a response of
// size bytes, as the assessment records it.
func judge(p pathmodel.Capacity, size int64) *Absorbs {
	j := pathmodel.Judge(p, size)
	return &Absorbs{PredictedBytes: p.Total(), PredictedMostBytes: p.Most(), Hops: p.String(), ResponseBytes: size,
		MarginUnder: pathmodel.MaxUnder, MarginOver: pathmodel.MaxOver, Verdict: j.Verdict, Fits: j.Verdict == AbsorbsFits}
}

// predictAbsorbs predicts the path of a slow reader on route for a
// response of size bytes, the client's side (and a managed stack's
// server) under this machine's socket buffer settings local; an external
// stack's server under serverWmem, the most its app's send buffer holds
// (0: not given). Nil, and why, where the model cannot.
func predictAbsorbs(route stack.Route, external bool, serverWmem, size int64, local *recorder.NetSettings) (*Absorbs, string) {
	switch {
	case external && route.Proxied():
		return nil, "the proxy's buffers are its own configuration"
	case external && serverWmem <= 0:
		return nil, "the server's socket buffer settings are not this machine's: give them (--server-wmem) to predict"
	}
	if why := pathmodel.Unpredicted(route); why != "" {
		return nil, why
	}
	var c pathmodel.Config
	if err := pathmodel.NetConfig(local, &c); err != nil {
		return nil, err.Error()
	}
	if external {
		// The app's send buffer is the server's; the client's receive
		// buffer this machine's.
		c.TCPWmem = recorder.TCPMem{Max: serverWmem}
	}
	c.Route, c.ClientRcvBuf = route, loadgen.DefaultSlowRcvBuf
	c.Proxy = stack.Deployment{Route: route, LargeSize: size}.ResponseBuffers()
	j, why := pathmodel.JudgeConfig(c, size)
	if j == nil {
		return nil, why
	}
	return judge(j.Path, size), ""
}
