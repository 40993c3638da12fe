package assess

import (
	"fmt"
	"strconv"
	"strings"
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
		if !ok {
			return nil, fmt.Errorf("%q: want PROBE<N, e.g. slow-readers<8", term)
		}
		p, err := ParseProbe(strings.TrimSpace(name))
		if err != nil {
			return nil, fmt.Errorf("%q: %v (allowed %s)", term, err, probeNames())
		}
		n, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || n < 1 || n > MaxClients {
			return nil, fmt.Errorf("%q: the bound must be a whole number from 1 to %d", term, MaxClients)
		}
		for _, b := range out {
			if b.Probe == p {
				return nil, fmt.Errorf("%q: %s given twice", term, p)
			}
		}
		out = append(out, Bound{p, n})
	}
	return out, nil
}

// Failed are the bounds the verdicts break: a probe that degraded with
// fewer clients than its bound, or that did not run. A probe that did not
// degrade passes only if it was tried up to the bound (a budget that cut
// it short is not a pass).
func (r *Result) Failed() []string {
	var out []string
	for _, b := range r.bounds {
		var v *Verdict
		for i := range r.Verdicts {
			if Probe(r.Verdicts[i].Probe) == b.Probe {
				v = &r.Verdicts[i]
			}
		}
		switch {
		case v == nil:
			out = append(out, fmt.Sprintf("%s: the probe did not run", b))
		case v.ClientsToDegrade != nil && *v.ClientsToDegrade < b.Min:
			out = append(out, fmt.Sprintf("%s: degraded with %d", b, *v.ClientsToDegrade))
		case v.ClientsToDegrade == nil && v.Tried < b.Min:
			out = append(out, fmt.Sprintf("%s: tried only up to %d (%s)", b, v.Tried, v.Stopped))
		}
	}
	return out
}
