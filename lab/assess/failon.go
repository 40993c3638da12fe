package assess

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slowlab/slowlab/report"
)

// Bound is one --fail-on term: probe's threshold must not be below Min.
type Bound struct {
	Probe Probe
	Min   int
}

func (b Bound) String() string { return fmt.Sprintf("%s<%d", b.Probe, b.Min) }

// ParseFailOn parses "slow-readers<8,idle<100": each probe once, each
// bound 1 to MaxClients.
func ParseFailOn(s string) ([]Bound, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Bound
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		name, num, ok := strings.Cut(term, "<")
		switch {
		case term == "":
			return nil, fmt.Errorf("%q: an empty bound (a comma too many?): want PROBE<N, e.g. slow-readers<8", s)
		case strings.Contains(num, "<"):
			return nil, fmt.Errorf("%q: one bound a term: separate bounds with commas, e.g. slow-readers<8,idle<100", term)
		case !ok:
			return nil, fmt.Errorf("%q: want PROBE<N, e.g. slow-readers<8", term)
		}
		p, err := ParseProbe(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("%q: %v (allowed %s)", term, err, names(Probes))
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 1 || n > MaxClients {
			return nil, fmt.Errorf("%q: the bound must be a whole number from 1 to %d", term, MaxClients)
		}
		if slices.ContainsFunc(out, func(b Bound) bool { return b.Probe == p }) {
			return nil, fmt.Errorf("%q: %s given twice", term, p)
		}
		out = append(out, Bound{p, n})
	}
	return out, nil
}

// Judge judges the --fail-on bounds against the verdicts. A bound
// PROBE<N passes only when the probe held, with every client in place and
// the instrument valid, at N-1 clients or more, and no valid window
// degraded with fewer than N: so a bound the search never reached, a level
// whose clients the stack refused (short), or a threshold known only
// between two levels cannot pass. broken are the bounds the stack breaks
// (the gate: exit 1); unjudged those the assessment could not judge (the
// probe did not run, was stopped by the budget, an invalid instrument,
// /fast not recovering; exit 3).
func (r *Result) Judge() (broken, unjudged []string) {
	for _, b := range r.bounds {
		var v *Verdict
		for i := range r.Verdicts {
			if Probe(r.Verdicts[i].Probe) == b.Probe {
				v = &r.Verdicts[i]
			}
		}
		switch {
		case v == nil:
			unjudged = append(unjudged, fmt.Sprintf("%s: the probe did not run", b))
		case v.ClientsToDegrade != nil && *v.ClientsToDegrade < b.Min:
			broken = append(broken, fmt.Sprintf("%s: degraded with %d (%s, %s)", b, *v.ClientsToDegrade, v.Sure, report.Count(v.Windows, "window")))
		case v.HeldInPlace >= b.Min-1:
		case strings.HasPrefix(v.Stopped, "short"):
			broken = append(broken, fmt.Sprintf("%s: held in place only up to %d; %s", b, v.HeldInPlace, v.Stopped))
		case v.ClientsToDegrade != nil:
			unjudged = append(unjudged, fmt.Sprintf("%s: held up to %d and degraded at %d: the threshold is between them", b, v.HeldInPlace, *v.ClientsToDegrade))
		default:
			unjudged = append(unjudged, fmt.Sprintf("%s: held in place only up to %d (%s)", b, v.HeldInPlace, v.Stopped))
		}
	}
	return broken, unjudged
}

// Unmade are the probes whose verdict could not be made: the instrument
// invalid at every try, /fast not recovered, results not written, late.
func (r *Result) Unmade() []string {
	var out []string
	for _, v := range r.Verdicts {
		for _, why := range []string{"invalid", "not recovered", "failed", "late"} {
			if strings.HasPrefix(v.Stopped, why) {
				out = append(out, fmt.Sprintf("%s: %s", v.Probe, v.Stopped))
			}
		}
	}
	return out
}

// checkBounds parses failOn (ParseFailOn) and refuses bounds the
// assessment cannot judge, before any load: a probe it does not run, a
// count over the clients it tries.
func checkBounds(failOn string, probes []Probe, maxClients int) ([]Bound, error) {
	bounds, err := ParseFailOn(failOn)
	if err != nil {
		return nil, err
	}
	for _, b := range bounds {
		switch {
		case !slices.Contains(probes, b.Probe):
			return nil, fmt.Errorf("%s: probe %s is not among the probes run (%s)", b, b.Probe, names(probes))
		case b.Min > maxClients:
			return nil, fmt.Errorf("%s: over max_clients %d, the most clients tried: raise max_clients to %d or more", b, maxClients, b.Min)
		}
	}
	return bounds, nil
}
