package assess

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// File is the assessment's results file in its directory.
const File = "assessment.json"

// Verdict is one probe's outcome, an object of assessment.json.
type Verdict struct {
	Probe Probe `json:"probe"`
	// ClientsToDegrade is the first level at which /fast degraded; nil
	// when it did not (up to Tried clients: the maximum, or where the
	// budget stopped the probe, as Stopped says).
	ClientsToDegrade *int     `json:"clients_to_degrade"`
	MaxClients       int      `json:"max_clients"`
	Tried            int      `json:"clients_tried"`
	BaselineP50MS    float64  `json:"fast_baseline_p50_ms"`
	BaselineP95MS    float64  `json:"fast_baseline_p95_ms"`
	AtP95MS          *float64 `json:"fast_p95_ms_at_degrade"` // nil when none succeeded
	AtFailed         int      `json:"fast_failed_at_degrade"`
	Stopped          string   `json:"stopped"`
	// Held is what the instruments saw holding the stack at the level
	// that degraded (the last level when none did).
	Held Held `json:"held"`
	// Fix is the change that measured best against this probe, and
	// FixDoc the page whose measurement shows it ("" when /fast held).
	Fix    string  `json:"fix"`
	FixDoc string  `json:"fix_doc,omitempty"`
	Levels []Level `json:"levels"`
}

// degradedLevel is the level that degraded, else the last one (nil
// without levels).
func (v Verdict) degradedLevel() *Level {
	if len(v.Levels) == 0 {
		return nil
	}
	return &v.Levels[len(v.Levels)-1]
}

// Held is the peaks of the stack's instruments over one level.
type Held struct {
	AppEstablished    *float64 `json:"app_established,omitempty"`
	AppQuietClients   *float64 `json:"app_quiet_clients,omitempty"`
	AppSendQueueBytes *float64 `json:"app_send_queue_bytes,omitempty"`
	ProxyEstablished  *float64 `json:"proxy_established,omitempty"`
	ProxyTempFiles    *float64 `json:"proxy_temp_files,omitempty"`
	ProxyTempBytes    *float64 `json:"proxy_temp_bytes,omitempty"`
	Summary           string   `json:"summary"`
}

// heldBy takes the peaks of the samples within lv's time.
func heldBy(samples []recorder.ResourceSample, lv *Level) Held {
	var h Held
	if lv == nil {
		return h
	}
	peak := func(comp string, get func(recorder.ResourceSample) recorder.Maybe) *float64 {
		var top *float64
		for _, s := range samples {
			if s.Component != comp || s.TS < lv.StartS || s.TS > lv.EndS {
				continue
			}
			if m := get(s); m.Valid && (top == nil || m.Value > *top) {
				v := m.Value
				top = &v
			}
		}
		return top
	}
	h.AppEstablished = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.Established })
	h.AppQuietClients = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.QuietClients })
	h.AppSendQueueBytes = peak("app", func(s recorder.ResourceSample) recorder.Maybe { return s.SendQueueBytes })
	h.ProxyEstablished = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.Established })
	h.ProxyTempFiles = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.TempFiles })
	h.ProxyTempBytes = peak("proxy", func(s recorder.ResourceSample) recorder.Maybe { return s.TempLogicalBytes })
	var parts []string
	if h.AppEstablished != nil {
		parts = append(parts, fmt.Sprintf("app %.0f connections", *h.AppEstablished))
	}
	if h.AppQuietClients != nil && *h.AppQuietClients > 0 {
		parts = append(parts, fmt.Sprintf("%.0f silent 10s+", *h.AppQuietClients))
	}
	if h.AppSendQueueBytes != nil {
		parts = append(parts, "send queues "+mibs(*h.AppSendQueueBytes))
	}
	if h.ProxyTempFiles != nil {
		parts = append(parts, fmt.Sprintf("proxy temp files %.0f", *h.ProxyTempFiles))
	}
	if h.ProxyTempBytes != nil && *h.ProxyTempBytes > 0 {
		parts = append(parts, mibs(*h.ProxyTempBytes))
	}
	h.Summary = strings.Join(parts, ", ")
	return h
}

func mibs(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// fixFor is the fix of probe p on route, and the page whose measurement
// shows it works.
func fixFor(p Probe, route stack.Route) (fix, doc string) {
	switch p {
	case ProbeSlowReaders:
		if route.Buffering() {
			return "raise proxy_max_temp_file_size (and its disk): a response over it is not buffered, so its reader holds the worker again", "docs/temp-cliff.md"
		}
		return "a buffering proxy in front (NGINX proxy_buffering on): it reads the response at the app's speed and holds it for the reader", "docs/slow-client.md"
	case ProbeSlowUploads:
		return "proxy_request_buffering on (NGINX's default) in front: the proxy reads the whole body before the app sees it", "docs/slow-upload.md"
	case ProbeIdle:
		return "a proxy in front (it holds idle connections without a worker; client_header_timeout ends them), or a worker model that waits for requests without a worker (gevent, Uvicorn, Node)", "docs/idle-connections.md"
	case ProbeSlowloris:
		return "a proxy in front with a short client_header_timeout (NGINX: 60s by default), or an async worker model", "docs/idle-connections.md"
	case ProbeStalled:
		return "a buffering proxy in front, with send_timeout bounding a client that reads nothing", "docs/stalled-reader.md"
	case ProbeHeldStreams:
		return "serve held streams from an async worker model (gevent, Uvicorn, Node) or a pool of their own", "docs/long-poll.md"
	}
	return "", ""
}

// Result is an assessment: what it ran on and a verdict per probe.
type Result struct {
	Dir      string    `json:"-"`
	Stack    string    `json:"stack"`
	Server   string    `json:"server"`
	Route    string    `json:"route"`
	BudgetS  float64   `json:"budget_s"`
	TookS    float64   `json:"took_s"`
	Verdicts []Verdict `json:"probes"`
	bounds   []Bound
}

// AllFailed implements lab.Result: no probe measured a level.
func (r *Result) AllFailed() bool {
	for _, v := range r.Verdicts {
		if len(v.Levels) > 0 {
			return false
		}
	}
	return true
}

// WriteJSON writes assessment.json (replacing it whole).
func (r *Result) WriteJSON() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(r.Dir, File+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(r.Dir, File))
}

// Print implements lab.Result: the verdict table.
func (r *Result) Print(w io.Writer) {
	fmt.Fprintf(w, "%s %s on the %s stack, %.0f s (budget %.0f s)\n\n", r.Server, r.Route, r.Stack, r.TookS, r.BudgetS)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "probe\tclients to degrade\t/fast p95 ms before\tat\tstopped\theld\t")
	for _, v := range r.Verdicts {
		n, at := fmt.Sprintf("not with %d", v.Tried), "-"
		if v.ClientsToDegrade != nil {
			n = fmt.Sprint(*v.ClientsToDegrade)
		}
		if v.AtP95MS != nil {
			at = fmt.Sprintf("%.1f", *v.AtP95MS)
		}
		if lv := v.degradedLevel(); v.ClientsToDegrade != nil && lv != nil && lv.FastFail > 0 {
			at = fmt.Sprintf("%d/%d failed", lv.FastFail, lv.FastSent)
		}
		stopped, _, _ := strings.Cut(v.Stopped, ":")
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%s\t%s\t%s\t\n", v.Probe, n, v.BaselineP95MS, at, stopped, v.Held.Summary)
	}
	tw.Flush()
	for _, v := range r.Verdicts {
		if strings.HasPrefix(v.Stopped, "failed") || strings.HasPrefix(v.Stopped, "not recovered") {
			fmt.Fprintf(w, "\n%s: %s", v.Probe, v.Stopped)
		}
		if v.Fix != "" {
			fmt.Fprintf(w, "\n%s: %s (%s)", v.Probe, v.Fix, v.FixDoc)
		}
	}
	fmt.Fprintln(w)
	for _, b := range r.Failed() {
		fmt.Fprintf(w, "fail-on: %s\n", b)
	}
}
