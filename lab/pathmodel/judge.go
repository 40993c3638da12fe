package pathmodel

import (
	"fmt"
	"math"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Verdicts of a Judgement: the response fits in the path even at the
// model's lowest error (a reader cannot hold a worker with it), does not
// fit even at its highest (the rest holds the app's send), or lies within
// the error (the model cannot tell).
const (
	Fits      = "fits"
	Holds     = "holds"
	Uncertain = "uncertain"
)

// Judgement is what a path holds of one response, with the model's
// measured error as the margin.
type Judgement struct {
	Path    Capacity
	Size    int64  // the response, bytes
	Verdict string // Fits, Holds or Uncertain
	// Least and Most are the bounds the verdict used: the least the path
	// holds (Total less MaxUnder) and the most (Most plus MaxOver).
	Least, Most float64
}

// Bounds are the least and the most bytes a path holds whose prediction
// is total and the most its buffers can grow to most, widened by the
// model's measured error under and over.
func Bounds(total, most int64, under, over float64) (least, mostHeld float64) {
	return float64(total) * (1 - under), float64(most) * (1 + over)
}

// Judge is what path p holds of a response of size bytes: it fits only
// if it fits in the least the path holds, it holds the app only if it is
// over the most, else the model cannot tell.
func Judge(p Capacity, size int64) Judgement {
	j := Judgement{Path: p, Size: size}
	j.Least, j.Most = Bounds(p.Total(), p.Most(), MaxUnder, MaxOver)
	switch s := float64(size); {
	case s <= j.Least:
		j.Verdict = Fits
	case s > j.Most:
		j.Verdict = Holds
	default:
		j.Verdict = Uncertain
	}
	return j
}

// MayHold reports whether the path may hold the whole response, so that
// its app may be free at once: every verdict but Holds.
func (j Judgement) MayHold() bool { return j.Verdict != Holds }

// LeastHeld is the least response size the model says holds the app:
// a byte over the most the path holds.
func (j Judgement) LeastHeld() int64 { return int64(math.Floor(j.Most)) + 1 }

// Warning says, for an experiment whose finding needs the app held by
// the download of condition, that the path may hold the whole response:
// the response, the predicted capacity with its hops, the verdict's
// bounds and the least size that would be held. "" when the model says
// the app is held.
func (j Judgement) Warning(condition string) string {
	if !j.MayHold() {
		return ""
	}
	why := fmt.Sprintf("the model cannot tell: %s to %s within its measured error (-%.0f%%, +%.0f%%)",
		mib(j.Least), mib(j.Most), 100*MaxUnder, 100*MaxOver)
	if j.Verdict == Fits {
		why = fmt.Sprintf("it fits: the path holds at least %s within the model's measured error of -%.0f%%", mib(j.Least), 100*MaxUnder)
	}
	grown := ""
	if j.Path.ProxyRecvMax > j.Path.ProxyRecv {
		grown = fmt.Sprintf(", %s with the proxy's receive buffer grown to tcp_rmem's max %s", mib(float64(j.Path.Most())),
			bytesize.Format(j.Path.ProxyRecvMax))
	}
	return fmt.Sprintf("%s: the path may hold the whole %s response, so the app may hand it over at once and show no held worker "+
		"(%s; predicted %s%s); the least size held is %s (%d bytes)",
		condition, mib(float64(j.Size)), why, j.Path, grown, mib(float64(j.LeastHeld())), j.LeastHeld())
}

func mib(b float64) string { return fmt.Sprintf("%.2f MiB", b/(1<<20)) }

// Unpredicted says why the model has no prediction for a slow download
// on route of a stack slowlab starts, "" when it has one: a route it does
// not know, or a buffering proxy other than NGINX's (and the embedded
// proxy's, which has NGINX's buffers).
func Unpredicted(route stack.Route) string {
	switch {
	case !route.Valid():
		return fmt.Sprintf("route %s is not a download route the model knows", route)
	case route.Buffering() && route.Owner() != "":
		// The model's buffering proxy is NGINX's: its proxy_buffers and
		// a temp file. Caddy's buffer_responses and Apache's
		// ProxyIOBufferSize hold a response in memory, as much as they
		// read ahead of the reader, which is not configuration (on
		// apache-iobuffer it varies by run: docs/proxies.md).
		return fmt.Sprintf("route %s reads ahead into %s's memory, not into NGINX's buffers and temp file, which are what the model knows", route, route.Owner())
	}
	return ""
}

// JudgeConfig predicts c's path and judges a response of size bytes on
// it; nil and why where the model cannot (Unpredicted, Predict's error).
func JudgeConfig(c Config, size int64) (*Judgement, string) {
	if why := Unpredicted(c.Route); why != "" {
		return nil, why
	}
	p, err := Predict(c)
	if err != nil {
		return nil, err.Error()
	}
	j := Judge(p, size)
	return &j, ""
}

// Download is one slow download as an experiment on a stack slowlab
// starts configures it.
type Download struct {
	Route        stack.Route
	Proxy        stack.ResponseBuffers // the proxy's response buffers on Route
	ClientRcvBuf int64                 // the slow reader's SO_RCVBUF; 0 the kernel's
	Size         int64                 // the response, bytes
}

// DownloadOf is a slow download of d's /large (d.LargeSize bytes) on
// d's route, through the buffers d gives its proxy, read by a client
// whose SO_RCVBUF is rcvBuf (0: the kernel's).
func DownloadOf(d stack.Deployment, rcvBuf int64) Download {
	return Download{Route: d.Route, Proxy: d.ResponseBuffers(), ClientRcvBuf: rcvBuf, Size: d.LargeSize}
}

// JudgeDownload judges d under net, the socket buffer settings of the
// namespace the session runs in (no app slowlab starts sets SO_SNDBUF);
// nil and why where the model cannot, or net lacks what it needs.
func JudgeDownload(net *recorder.NetSettings, d Download) (*Judgement, string) {
	if why := Unpredicted(d.Route); why != "" {
		return nil, why
	}
	c := Config{Route: d.Route, ClientRcvBuf: d.ClientRcvBuf, Proxy: d.Proxy}
	if err := NetConfig(net, &c); err != nil {
		return nil, err.Error()
	}
	return JudgeConfig(c, d.Size)
}
