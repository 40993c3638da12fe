package netem

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Method is how a Path delays packets.
type Method string

// Methods; see the package doc.
const (
	MethodAuto  Method = "auto" // none without delay or rate, else netem, else tun
	MethodNetem Method = "netem"
	MethodTUN   Method = "tun"
	MethodNone  Method = "none"
)

// Methods lists the valid methods.
var Methods = []Method{MethodAuto, MethodNetem, MethodTUN, MethodNone}

// MTU is the path's MTU: TCP segments carry at most 1460 bytes, as on
// Ethernet.
const MTU = 1500

// MaxDelay bounds Config.Delay, DelayUp and DelayDown.
const MaxDelay = 10 * time.Second

// MaxLoss bounds Config.Loss, in percent: beyond it TCP barely moves and
// nothing measured would mean anything.
const MaxLoss = 50.0

// MinRate is the lowest Config.Rate, in bytes per second (64 kbit/s).
const MinRate = 8000

// ErrNoNetem is wrapped by New's error when MethodNetem was asked for and
// the kernel has no netem qdisc (adding one fails with ENOENT).
var ErrNoNetem = errors.New("the kernel has no netem qdisc (sch_netem)")

// Link names inside the namespaces; the namespaces are private, so the
// names cannot clash with anything.
const (
	clientLink = "slowlab-cli"
	serverLink = "slowlab-srv"
)

// Config configures a Path.
type Config struct {
	Delay time.Duration // added one way, in each direction: the RTT grows by 2*Delay
	// DelayUp and DelayDown, when either is set, replace Delay (which must
	// then be 0): the one-way delay from client to server and from server
	// to client. The RTT grows by their sum.
	DelayUp, DelayDown time.Duration
	// Loss is the percentage of packets dropped at random in each
	// direction, independently (netem loss random); 0 for none.
	Loss   float64
	Rate   int64  // bytes per second in each direction; 0 for no limit
	Method Method // MethodAuto when ""
	// CongestionControl is set (TCP_CONGESTION) on the sockets Listen and
	// DialContext create; the namespace default when "".
	CongestionControl string
	QueueLimit        int // packets queued per direction; DefaultQueueLimit when 0
	// IPv6 gives the path IPv6 as well: the ends get addresses of the
	// documentation prefix (Path.ClientAddr6, Path.ServerAddr6) on the
	// same link, and Path.SilentAddr6 is routed across the path to the
	// server namespace, where nothing answers it. Without it the
	// namespaces have IPv6 off.
	IPv6 bool
}

// Validate names the first field that cannot be used.
func (c Config) Validate() error {
	if c.Method != "" && !slices.Contains(Methods, c.Method) {
		return fmt.Errorf("method %q: allowed auto, netem, tun, none", c.Method)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"delay", c.Delay}, {"delay up", c.DelayUp}, {"delay down", c.DelayDown}} {
		if d.v < 0 || d.v > MaxDelay {
			return fmt.Errorf("%s %s: allowed 0 to %s", d.name, d.v, MaxDelay)
		}
	}
	if c.Delay > 0 && (c.DelayUp > 0 || c.DelayDown > 0) {
		return fmt.Errorf("delay %s with delay up %s and down %s: give either one delay for both directions or one per direction", c.Delay, c.DelayUp, c.DelayDown)
	}
	if c.Loss < 0 || c.Loss > MaxLoss || c.Loss != c.Loss {
		return fmt.Errorf("loss %g%%: allowed 0 to %g%%", c.Loss, MaxLoss)
	}
	if c.Rate < 0 {
		return fmt.Errorf("rate %d: must be 0 (no limit) or more bytes per second", c.Rate)
	}
	if c.Rate > 0 && c.Rate < MinRate {
		return fmt.Errorf("rate %d bytes/s: at least %d bytes/s (64 kbit/s), or 0 for no limit", c.Rate, MinRate)
	}
	if c.Method == MethodNone && !c.plain() {
		return fmt.Errorf("method none with delay %s (up %s, down %s), loss %g%% and rate %d: none adds nothing; use auto, netem or tun",
			c.Delay, c.DelayUp, c.DelayDown, c.Loss, c.Rate)
	}
	if c.QueueLimit < 0 || c.QueueLimit > 1_000_000 {
		return fmt.Errorf("queue limit %d: allowed 0 (default %d) to 1000000", c.QueueLimit, DefaultQueueLimit)
	}
	if cc := c.CongestionControl; len(cc) > 15 || strings.Trim(cc, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
		return fmt.Errorf("congestion control %q: want a kernel algorithm name such as cubic or bbr", cc)
	}
	return nil
}

// plain reports whether the path adds nothing: no delay, loss or rate.
func (c Config) plain() bool {
	return c.Delay == 0 && c.DelayUp == 0 && c.DelayDown == 0 && c.Loss == 0 && c.Rate == 0
}

// oneWay returns the delays from client to server and back.
func (c Config) oneWay() (up, down time.Duration) {
	if c.DelayUp > 0 || c.DelayDown > 0 {
		return c.DelayUp, c.DelayDown
	}
	return c.Delay, c.Delay
}
