// Package latencygap is the latency-gap experiment (docs/experiments.md section
// 3): what the server measures of a request against what the client
// waits, on a kept-alive and a new connection, across a path that delays
// every packet (lab/netem) between a client and a server network
// namespace that the run creates. The server is the embedded app (async
// model) with its Server-Timing both as a header and as a trailer timed
// through the last byte (appserver.Options.LastByteTiming); the client is
// loadgen's, dialing inside the client namespace and reading each
// connection's RTT from the kernel, so that every row says the delay the
// path really had.
//
// Beside single requests it loads redirect chains and pages as a browser
// does (browser), timing every request's lookup, connect, TLS handshake,
// first and last byte, each load against the lower bound its
// configuration makes certain (loadBound).
package latencygap

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/internal/cliflag"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
)

// Name is the experiment's name.
const Name = "latency-gap"

// MaxDelay bounds the added one-way delay.
const MaxDelay = time.Second

// Config is the experiment: its YAML tags are its scenario schema.
type Config struct {
	lab.Header `yaml:",inline"`
	Delays     []lab.Duration `yaml:"delays"` // added one-way delay, each direction
	Sizes      []lab.Size     `yaml:"sizes"`  // response body bytes (/bytes?n=)
	Runs       int            `yaml:"runs"`   // requests per mode and condition
	Method     netem.Method   `yaml:"method"` // auto: none at 0, else netem, else the TUN delay line
	Rate       lab.Size       `yaml:"rate"`   // bytes per second each way, every condition; 0 for no limit
	// DelayUp and DelayDown, when either is set, replace Delays with one
	// path of these one-way delays: client to server, and back.
	DelayUp   lab.Duration `yaml:"delay_up"`
	DelayDown lab.Duration `yaml:"delay_down"`
	// The lists below are one condition per element (none when empty
	// unless said), as their flags say in Flags.
	Losses []float64 `yaml:"loss"`            // random loss, percent, each direction
	Rates  []BitRate `yaml:"rates,omitempty"` // bits per second ("10mbit") each way, instead of rate; 0 is no limit
	TLS    []string  `yaml:"tls"`             // TLSModes; 1.3-resume: new connections resume the previous session, without 0-RTT
	Work   []Work    `yaml:"work"`            // the server's processing time per request: "10ms" asleep, "cpu:10ms" on the CPU
	// DNS are how the client finds the server (DNSModes), DNSDelay how
	// long the resolver waits before it answers, DNSFamilies what it
	// answers for AAAA (DNSFamilyModes, empty: a) with each DNS mode that
	// looks up, and DNSAAAADelay how much later than A it answers AAAA
	// in aaaa-late (and only there).
	DNS          []string     `yaml:"dns"`
	DNSDelay     lab.Duration `yaml:"dns_delay"`
	DNSFamilies  []string     `yaml:"dns_families,omitempty"`
	DNSAAAADelay lab.Duration `yaml:"dns_aaaa_delay,omitempty"`
	// Redirects are chains of that many hops (a 301, then 302s) before a
	// resource of each size, going where RedirectOrigins say (empty:
	// same); Pages are HTML documents referring to that many
	// sub-resources of each size across two origins, over each of
	// PageProtocols (empty: http/1.1).
	Redirects       []int    `yaml:"redirects,omitempty"`
	RedirectOrigins []string `yaml:"redirect_origins,omitempty"`
	Pages           []int    `yaml:"pages,omitempty"`
	PageProtocols   []string `yaml:"page_protocols,omitempty"`
	// CongestionControl of the path's sockets; the namespaces' default when "".
	CongestionControl string       `yaml:"congestion_control"`
	Timeout           lab.Duration `yaml:"timeout"` // per request
	// Reps measures each condition that many times over: its medians are
	// over Reps x Runs requests per mode.
	Reps int `yaml:"reps"`
}

// Published returns the published conditions: 1 KB and 100 KB responses
// at 0 and 25 ms each way (50 ms RTT), 40 runs, cubic (Linux's default
// congestion control, which the original ran with).
func Published() *Config {
	return &Config{Header: lab.Header{Experiment: Name},
		Delays: []lab.Duration{0, lab.Duration(25 * time.Millisecond)}, Sizes: []lab.Size{1024, 102400},
		Runs: 40, Method: netem.MethodAuto, CongestionControl: "cubic", Timeout: lab.Duration(10 * time.Second), Reps: 1,
		Losses: []float64{0}, TLS: []string{TLSNone}, Work: []Work{{Kind: WorkSleep}}, DNS: []string{DNSNone}}
}

// Repetitions implements lab.Repeated.
func (c *Config) Repetitions() *int { return &c.Reps }

// MaxReps implements lab.RepsLimit: each repetition is Runs requests
// more per mode.
func (c *Config) MaxReps() int { return 100 }

// quickRuns are the requests per mode and condition of --quick.
const quickRuns = 10

// Reduce implements lab.Reducer: --quick measures 10 requests per mode
// and condition, and keeps the first and the last of each list of the
// grid (delays, sizes, losses, rates, TLS modes, processing times, DNS
// modes and families, redirect hops and pages).
func (c *Config) Reduce() {
	c.Runs = min(c.Runs, quickRuns)
	c.Delays = ends(c.Delays)
	c.Sizes = ends(c.Sizes)
	c.Losses = ends(c.Losses)
	c.Rates = ends(c.Rates)
	c.TLS = ends(c.TLS)
	c.Work = ends(c.Work)
	c.DNS = ends(c.DNS)
	c.DNSFamilies = ends(c.DNSFamilies)
	if !slices.Contains(c.DNSFamilies, FamiliesLate) {
		c.DNSAAAADelay = 0 // its family mode left out: the delay would be refused
	}
	c.Redirects = ends(c.Redirects)
	c.Pages = ends(c.Pages)
}

// ends keeps a list's first and last element.
func ends[T any](s []T) []T {
	if len(s) <= 2 {
		return s
	}
	return []T{s[0], s[len(s)-1]}
}

// Head implements lab.Config.
func (c *Config) Head() *lab.Header { return &c.Header }

// Flags implements lab.Config.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Runs, "runs", c.Runs, "requests per mode (keep-alive, new connection) and condition; medians over them")
	fs.Var(&cliflag.List[lab.Duration]{To: &c.Delays, Parse: parseDelay, Want: "durations, comma-separated, e.g. 0,25ms"}, "delay",
		"added one-way delays, comma-separated, each applied in both directions (default 0,25ms)")
	fs.Var(lab.SizesFlag(&c.Sizes, "1k,100k"), "sizes", "response sizes, comma-separated (bytes; k, m suffixes) (default 1k,100k)")
	fs.Var((*lab.DurationFlag)(&c.DelayUp), "delay-up", "one-way delay client to server; give --delay-down with it (0 for none): the two replace --delay's list with one asymmetric path, so neither is taken alone or beside --delay")
	fs.Var((*lab.DurationFlag)(&c.DelayDown), "delay-down", "one-way delay server to client (see --delay-up)")
	fs.Var(&cliflag.List[float64]{To: &c.Losses, Parse: parseLoss}, "loss",
		"random packet loss each way, comma-separated percentages, one condition each (e.g. 0.1%,1%)")
	fs.Var(&cliflag.List[BitRate]{To: &c.Rates, Parse: ParseBitRate}, "rate",
		"rate limit each way, comma-separated (bits per second: kbit, mbit, gbit), one condition each (e.g. 10mbit)")
	fs.Var(lab.NamesFlag(&c.TLS), "tls",
		"TLS modes, comma-separated, one condition each: none, 1.2, 1.3, 1.3-resume (default none)")
	fs.Var(&cliflag.List[Work]{To: &c.Work, Parse: ParseWork}, "work",
		"the server's processing time per request, comma-separated, one condition each: DURATION asleep, cpu:DURATION on the CPU (e.g. 0,1ms,10ms,50ms,200ms)")
	fs.Var(lab.NamesFlag(&c.DNS), "dns",
		"how the client finds the server, comma-separated, one condition each: none (its IP), cold (a lookup through the lab's resolver beyond the path per new connection, TTL 0), cached (the answer kept for its TTL) (default none)")
	fs.Var(&cliflag.List[int]{To: &c.Redirects, Parse: strconv.Atoi, Want: "hop counts, comma-separated, e.g. 0,1,2"}, "redirects",
		"redirect chains, comma-separated hop counts, one condition each: each hop a 301 or 302 before the resource (e.g. 0,1,2)")
	fs.Var(lab.NamesFlag(&c.RedirectOrigins), "redirect-origins",
		"where redirect hops go, comma-separated, one condition each: same (the server's origin), cross (each hop another origin: a new connection, and with --dns a new lookup) (default same)")
	fs.Var(&cliflag.List[int]{To: &c.Pages, Parse: strconv.Atoi, Want: "sub-resource counts, comma-separated, e.g. 10,50"}, "pages",
		"page loads, comma-separated sub-resource counts, one condition each: an HTML document, then its sub-resources across two origins at once (e.g. 10,50)")
	fs.Var(lab.NamesFlag(&c.PageProtocols), "page-protocols",
		"the pages' protocols, comma-separated, one condition each: http/1.1 (6 connections per origin), h2 (one per origin; needs --tls) (default http/1.1)")
	fs.Var(lab.NamesFlag(&c.DNSFamilies), "dns-families",
		"what the resolver answers for AAAA, comma-separated, one condition each with each --dns that looks up: a (AAAA empty: IPv4 only), a+aaaa (the server's IPv6 address: the client connects over IPv6), aaaa-blackhole (an address that never answers: the client falls back to IPv4 after 300 ms, Go's happy eyeballs), aaaa-late (the IPv6 address, --dns-aaaa-delay after the A answer) (default a)")
	fs.Var((*lab.DurationFlag)(&c.DNSAAAADelay), "dns-aaaa-delay", "how much later than A the resolver answers AAAA, for --dns-families aaaa-late (e.g. 100ms)")
	fs.Var((*lab.DurationFlag)(&c.DNSDelay), "dns-delay", "the resolver's extra delay before it answers, for --dns cold and cached (e.g. 20ms)")
}

// CheckFlags implements lab.FlagChecker: --delay-up and --delay-down
// replace --delay's list with one path, so they come as a pair and not
// beside --delay; alone, one would silently drop the published delays
// and pick 0 for the other direction.
func (c *Config) CheckFlags(given func(name string) bool) error {
	up, down := given("delay-up"), given("delay-down")
	switch {
	case (up || down) && given("delay"):
		return errors.New("--delay with --delay-up/--delay-down: give one (--delay-up and --delay-down replace --delay's list with one asymmetric path)")
	case up && !down:
		return fmt.Errorf("--delay-up %s without --delay-down: give both (0 for none); together they replace --delay's list (default 0,25ms) with one asymmetric path", time.Duration(c.DelayUp))
	case down && !up:
		return fmt.Errorf("--delay-down %s without --delay-up: give both (0 for none); together they replace --delay's list (default 0,25ms) with one asymmetric path", time.Duration(c.DelayDown))
	}
	return nil
}

// Validate implements lab.Config, naming each field by its YAML path.
func (c *Config) Validate() error {
	if len(c.Delays) == 0 {
		return errors.New("delays: none given")
	}
	for i, d := range c.Delays {
		if d < 0 || time.Duration(d) > MaxDelay {
			return fmt.Errorf("delays[%d] %s: allowed 0 to %s each way", i, time.Duration(d), MaxDelay)
		}
		if c.Method == netem.MethodNone && d > 0 {
			return fmt.Errorf("delays[%d] %s with method none: none adds no delay; use auto, netem or tun", i, time.Duration(d))
		}
		if slices.Index(c.Delays, d) != i {
			return fmt.Errorf("delays[%d] %s: given twice", i, time.Duration(d))
		}
	}
	if len(c.Sizes) == 0 {
		return errors.New("sizes: none given")
	}
	if err := checkList("sizes", "%d", c.Sizes, upTo(lab.Size(64<<20), fmt.Sprintf("%d bytes", 64<<20))); err != nil {
		return err
	}
	switch {
	case c.Runs < 1 || c.Runs > 10000:
		return fmt.Errorf("runs %d: allowed 1 to 10000", c.Runs)
	case c.Reps*c.Runs > 10000:
		return fmt.Errorf("reps %d: reps x runs (%d) at most 10000", c.Reps, c.Reps*c.Runs)
	case c.Timeout <= 0 || time.Duration(c.Timeout) > 5*time.Minute:
		return fmt.Errorf("timeout %s: allowed more than 0 up to 5m", time.Duration(c.Timeout))
	}
	if err := (netem.Config{Method: c.Method, Rate: int64(c.Rate), CongestionControl: c.CongestionControl}).Validate(); err != nil {
		return err
	}
	return c.validateConditions()
}

// parseDelay reads one delay: a duration, or 0.
func parseDelay(s string) (lab.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	return lab.Duration(d), err
}
