package latencygap

import (
	"fmt"
	"math"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
)

// MaxRTTError is how far a condition's measured RTT may be from the
// configured one for its row to be valid.
const MaxRTTError = 1.0 // ms

// Row is one condition's results: its gap.csv and gap-path.csv rows.
//
// gap.csv's server_ms is what the server reports in its Server-Timing
// header, the figure a server-side dashboard sees. Timed through the last
// byte (server_last_byte_ms), a 100 KB response on a new connection shows
// up to two RTTs more, because a new socket's send buffer holds about
// 50 KB and the write waits for ACKs.
type Row struct {
	Gap  Gap
	Path Path
}

// summarize computes a condition's row from its requests, the
// lateness of its packets and its packet counts (nil when they could not
// be read). The row is valid only when the measured RTT is within
// MaxRTTError of the configured one, for the TUN delay line its p99
// lateness within netem.MaxP99Lateness, and the loss its ends measured
// agrees with the asked one (setLoss).
func summarize(cond condition, configured float64, method, cc string, reqs []Request, lt netem.Lateness, counts *pathCounts) Row {
	size := cond.size
	row := Row{Gap: SummarizeRun(size, configured, method, reqs)}
	row.Gap.Settings = cond.settings
	rtt := row.Gap.RTTMS
	row.Path = Path{SizeBytes: size, ConfiguredRTTMS: configured, RTTMS: rtt, DelayMethod: method, MTU: netem.MTU,
		CongestionControl: cc, Packets: lt.Packets, Dropped: lt.Dropped, Settings: cond.settings,
		Valid: lt.Valid() && rtt.Valid && math.Abs(rtt.Value-configured) <= maxRTTError(cond.path)}
	setLoss(&row.Path, cond.path.loss, method, counts)
	if method == string(netem.MethodTUN) && lt.Packets > 0 {
		row.Path.LatenessP50MS, row.Path.LatenessP99MS, row.Path.LatenessMaxMS = recorder.Some(ms(lt.P50)), recorder.Some(ms(lt.P99)), recorder.Some(ms(lt.Max))
	}
	return row
}

// maxRTTError is how far a path's measured RTT may be from its configured
// one: MaxRTTError, plus, on a rate-limited path, the time to send two
// full-size packets at its rate (a segment's RTT sample includes its own
// serialization, and its ACK's).
func maxRTTError(p pathCond) float64 {
	if p.rate <= 0 {
		return MaxRTTError
	}
	return MaxRTTError + ms(time.Duration(2*netem.MTU*8*int64(time.Second)/int64(p.rate)))
}

// invalidWhy says why a path was not faithful.
func invalidWhy(p Path) string {
	if p.LatenessP99MS.Valid && p.LatenessP99MS.Value > float64(netem.MaxP99Lateness)/1e6 {
		return fmt.Sprintf("delay line lateness p99 %s ms above %s", lab.Num(p.LatenessP99MS, 3), netem.MaxP99Lateness)
	}
	if why := lossWhy(p); why != "" {
		return why
	}
	return fmt.Sprintf("measured RTT %s ms, configured %g ms: more than %s ms apart", lab.Num(p.RTTMS, 3), p.ConfiguredRTTMS,
		lab.Num(recorder.Some(maxRTTError(pathCond{rate: BitRate(p.RateBits)})), 3))
}

// rowLine is a condition's progress line.
func rowLine(r Row) string {
	g := r.Gap
	line := fmt.Sprintf("server %s ms (to last byte %s ms), keep-alive %s ms, new connection %s ms, blind %s%% (to last byte %s%%), %d runs; RTT measured %s ms of %g ms",
		lab.Num(g.ServerMS, 3), lab.Num(g.ServerLastByteMS, 3), lab.Num(g.ClientKeepaliveMS, 2), lab.Num(g.ClientNewMS, 2), lab.Num(g.ServerBlindPct, 1),
		lab.Num(g.ServerLastByteBlindPct, 1), g.Runs, lab.Num(g.RTTMS, 3), g.ConfiguredRTTMS)
	if r.Path.LatenessP99MS.Valid {
		line += "; delay line lateness p99 " + lab.Num(r.Path.LatenessP99MS, 3) + " ms"
	}
	if !r.Path.Valid {
		line += "  INVALID: " + invalidWhy(r.Path)
	}
	return line
}
