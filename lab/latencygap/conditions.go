package latencygap

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
)

// BitRate is a link rate in bits per second, written as a number with an
// optional kbit, mbit or gbit suffix ("10mbit"), as tc writes rates.
type BitRate int64

// MinRate is the lowest rate (64 kbit/s).
const MinRate = BitRate(8 * netem.MinRate)

// MaxRate is the highest rate (10 gbit/s).
const MaxRate = BitRate(10_000_000_000)

var rateUnits = []struct {
	suffix, label string // as tc writes the unit, as a figure does
	mult          float64
}{{"gbit", "Gbit/s", 1e9}, {"mbit", "Mbit/s", 1e6}, {"kbit", "kbit/s", 1e3}, {"bit", "bit/s", 1}}

// ParseBitRate reads "10mbit", "64kbit", "1.5gbit" or "8000".
func ParseBitRate(s string) (BitRate, error) {
	v, mult := strings.ToLower(strings.TrimSpace(s)), 1.0
	for _, u := range rateUnits {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			v, mult = num, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > float64(math.MaxInt64) {
		return 0, fmt.Errorf("%q is not a rate (want bits per second as N, Nkbit, Nmbit or Ngbit)", s)
	}
	return BitRate(math.Round(f * mult)), nil
}

// String writes the rate with the largest unit that keeps it whole.
func (r BitRate) String() string {
	for _, u := range rateUnits[:3] {
		if m := int64(u.mult); r != 0 && int64(r)%m == 0 {
			return strconv.FormatInt(int64(r)/m, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(r), 10) + "bit"
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (r *BitRate) UnmarshalYAML(n *yaml.Node) error { return unmarshalScalar(n, ParseBitRate, r) }

// unmarshalScalar sets *v to what parse reads of n, or says on which
// line what parse wants: a node that is no scalar is read as "".
func unmarshalScalar[T any](n *yaml.Node, parse func(string) (T, error), v *T) error {
	value := n.Value
	if n.Kind != yaml.ScalarNode {
		value = ""
	}
	parsed, err := parse(value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*v = parsed
	return nil
}

// MarshalYAML implements yaml.Marshaler.
func (r BitRate) MarshalYAML() (any, error) { return r.String(), nil }

// Work is a processing time the server spends per request, asleep (an
// I/O-bound handler) or on the CPU, written "10ms", "sleep:10ms" or
// "cpu:10ms".
type Work struct {
	D    time.Duration
	Kind string // WorkSleep or WorkCPU
}

// MaxWork bounds a condition's processing time.
const MaxWork = 5 * time.Second

// ParseWork reads "10ms", "sleep:10ms" or "cpu:10ms".
func ParseWork(s string) (Work, error) {
	kind, v, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		kind, v = WorkSleep, kind
	}
	d, err := time.ParseDuration(v)
	if v == "0" {
		d, err = 0, nil
	}
	if err != nil || (kind != WorkSleep && kind != WorkCPU) {
		return Work{}, fmt.Errorf("%q is not a processing time (want DURATION, sleep:DURATION or cpu:DURATION)", s)
	}
	return Work{D: d, Kind: kind}, nil
}

// String writes the work as ParseWork reads it.
func (w Work) String() string {
	if w.Kind == WorkCPU {
		return "cpu:" + w.D.String()
	}
	return w.D.String()
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (w *Work) UnmarshalYAML(n *yaml.Node) error { return unmarshalScalar(n, ParseWork, w) }

// MarshalYAML implements yaml.Marshaler.
func (w Work) MarshalYAML() (any, error) { return w.String(), nil }

// query is the request's work parameters ("" for none).
func (w Work) query() string {
	if w.D == 0 {
		return ""
	}
	return fmt.Sprintf("&work=%s&work_kind=%s", w.D, w.Kind)
}

// works is the grid's processing times, none when not given.
func (c *Config) works() []Work { return orOnly(c.Work, Work{Kind: WorkSleep}) }

// orOnly is a grid's list xs, or only def when none were given.
func orOnly[T any](xs []T, def T) []T {
	if len(xs) == 0 {
		return []T{def}
	}
	return xs
}

// pathCond is one network path of the grid: its one-way delays, random
// loss and rate limit.
type pathCond struct {
	up, down time.Duration
	loss     float64 // percent
	rate     BitRate // 0: no limit
}

func (p pathCond) rtt() time.Duration { return p.up + p.down }

// String names the path in progress lines.
func (p pathCond) String() string {
	s := fmt.Sprintf("%s each way", p.up)
	if p.up != p.down {
		s = fmt.Sprintf("%s up, %s down", p.up, p.down)
	}
	if p.loss > 0 {
		s += fmt.Sprintf(", %g%% loss", p.loss)
	}
	if p.rate > 0 {
		s += ", " + p.rate.String()
	}
	return s
}

// netem is the path's configuration for lab/netem.
func (p pathCond) netem(c *Config) netem.Config {
	return netem.Config{DelayUp: p.up, DelayDown: p.down, Loss: p.loss, Rate: int64(p.rate) / 8, Method: c.Method,
		CongestionControl: c.CongestionControl, IPv6: c.ipv6()}
}

// settings are the path's part of a row's Settings.
func (p pathCond) settings(tls string) Settings {
	return Settings{TLS: tls, LossPct: p.loss, RateBits: int64(p.rate), DelayUpMS: ms(p.up), DelayDownMS: ms(p.down),
		WorkKind: WorkSleep}
}

// paths is the grid's paths: each delay (or the one asymmetric pair)
// with each loss and each rate, in that nesting.
func (c *Config) paths() []pathCond {
	delays := []pathCond{{up: time.Duration(c.DelayUp), down: time.Duration(c.DelayDown)}}
	if c.DelayUp <= 0 && c.DelayDown <= 0 {
		delays = nil
		for _, d := range c.Delays {
			delays = append(delays, pathCond{up: time.Duration(d), down: time.Duration(d)})
		}
	}
	var out []pathCond
	for _, p := range delays {
		for _, loss := range orOnly(c.Losses, 0) {
			for _, rate := range orOnly(c.Rates, BitRate(8*c.Rate)) {
				p.loss, p.rate = loss, rate
				out = append(out, p)
			}
		}
	}
	return out
}

// tlsModes is the grid's TLS modes, none when not given.
func (c *Config) tlsModes() []string { return orOnly(c.TLS, TLSNone) }

// validateConditions checks the grid's path and TLS settings.
func (c *Config) validateConditions() error {
	for _, d := range []struct {
		name string
		v    lab.Duration
	}{{"delay_up", c.DelayUp}, {"delay_down", c.DelayDown}} {
		if d.v < 0 || time.Duration(d.v) > MaxDelay {
			return fmt.Errorf("%s %s: allowed 0 to %s", d.name, time.Duration(d.v), MaxDelay)
		}
	}
	var rateAndRates error
	if len(c.Rates) > 0 && c.Rate != 0 {
		rateAndRates = errors.New("rate and rates: give one (rate is bytes per second for every condition; rates, bits per second, one condition each)")
	}
	// The first error in this order (cmp.Or: each check is a pure one).
	err := cmp.Or(checkList("loss", "%g%%", c.Losses, upTo(netem.MaxLoss, fmt.Sprintf("%g%%", netem.MaxLoss))), rateAndRates,
		checkList("rates", "%s", c.Rates, func(r BitRate) string {
			if r != 0 && (r < MinRate || r > MaxRate) {
				return fmt.Sprintf("allowed 0 (no limit) or %s to %s", MinRate, MaxRate)
			}
			return ""
		}),
		checkList("tls", "%q", c.TLS, oneOf(TLSModes)),
		checkList("work", "%s", c.Work, func(w Work) string {
			if w.D < 0 || w.D > MaxWork {
				return fmt.Sprintf("allowed 0 to %s", MaxWork)
			}
			return ""
		}),
		c.validateDNS(), c.validateLoads())
	if err != nil {
		return err
	}
	if n := len(c.paths()) * len(c.tlsModes()) * len(c.works()) * len(c.dnsConds()) * len(c.Sizes) * (1 + len(c.loads())); n > maxConditions {
		return fmt.Errorf("%d conditions (paths x tls x work x dns x sizes x (1 + redirect chains and pages)): at most %d", n, maxConditions)
	}
	for _, p := range c.paths() {
		if err := p.netem(c).Validate(); err != nil {
			return fmt.Errorf("path %s: %w", p, err)
		}
	}
	return nil
}

// maxConditions bounds the grid: each condition is 2 x Runs requests.
const maxConditions = 500

// parseLoss reads "1%", "0.1%" or "1" (percent).
func parseLoss(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a percentage (want e.g. 0.1%% or 1)", s)
	}
	return f, nil
}
