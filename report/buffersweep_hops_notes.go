package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowlab/slowlab/recorder"
)

// hopNotes is what the hops figure's caption says of its panels: each
// panel's cell and run, the routes whose proxy hops are derived or
// reported by the proxy, the hops at 0 throughout, and the samples with
// a hop's socket missing.
type hopNotes struct {
	texts, derived, reported, zeroTexts, missingTexts []string
}

// add notes the panel of route k: the cell c (where: its size and rate)
// on kernel, preferred or not, run runID with status, its stack st and
// the hops at 0 throughout (zero).
func (h *hopNotes) add(k condKey, where, kernel string, c recorder.SweepCell, preferred bool, runID, status string, st hopStack, zero []string) {
	t := fmt.Sprintf("%s: the cell %s (kernel %s, directory %s)", k.route, where, kernel, c.Dir)
	if !preferred {
		t += ", the largest size at the median rate, since the route has no cell of 16 MiB at 2 MiB/s"
	}
	t += fmt.Sprintf(", run %s", runID)
	if status != recorder.RunOK {
		t += fmt.Sprintf(" (status %s: the route has no ok run with hop samples)", status)
	}
	t += fmt.Sprintf(", %d samples %s", len(st.ts), sampleInterval(st.ts))
	h.texts = append(h.texts, t)
	for _, hop := range []string{recorder.HopProxyMemory, recorder.HopProxyTempFile} {
		if st.sources[hop][recorder.HopSourceDerived] && !slices.Contains(h.derived, k.route) {
			h.derived = append(h.derived, k.route)
		}
		if st.sources[hop][recorder.HopSourceProxy] && !slices.Contains(h.reported, k.route) {
			h.reported = append(h.reported, k.route)
		}
	}
	if len(zero) > 0 {
		h.zeroTexts = append(h.zeroTexts, k.route+": "+strings.Join(zero, ", "))
	}
	var miss []string
	for _, l := range st.layers {
		if n := st.missing[l.hop]; n > 0 {
			miss = append(miss, fmt.Sprintf("%s in %d", l.hop, n))
		}
	}
	if len(miss) > 0 {
		h.missingTexts = append(h.missingTexts, k.route+": "+strings.Join(miss, ", "))
	}
}

// caption is the hops figure's caption.
func (h *hopNotes) caption() string {
	c := "Download 0 of one run per route, " + strings.Join(h.texts, "; ") + ". Stacked from the bottom, in MiB: " +
		"client_read (the bytes the client has read), then where the bytes written but not yet read are, from the " +
		"client back to the app (hops.csv's hops in transit): client_recv_queue, proxy_client_send_queue, proxy_temp_file, " +
		"proxy_memory, proxy_upstream_recv_queue, app_send_queue. A send queue holds its bytes until they are " +
		"acknowledged, and some of them the receiver already has: app_send_queue_delivered and " +
		"proxy_client_send_queue_delivered are taken off app_send_queue and proxy_client_send_queue, so nothing counts " +
		"twice. The line is app_written, the bytes the app has handed to its socket; any gap between it and the " +
		"stack's top is hops.csv's unaccounted. Time is seconds since the run start; panels share their axes."
	if len(h.derived) > 0 {
		c += " proxy_memory and proxy_temp_file of " + strings.Join(h.derived, " and ") + " are derived, not " +
			"measured (source \"derived\": NGINX reports no buffers): what the proxy read from the app minus what it " +
			"sent the client, in memory up to its proxy_buffer_size + proxy_buffers and the rest in its temp file."
	}
	if len(h.reported) > 0 {
		c += " proxy_memory and proxy_temp_file of " + strings.Join(h.reported, " and ") +
			" are the embedded proxy's own report of its buffers."
	}
	if len(h.zeroTexts) > 0 {
		c += " At 0 throughout, not drawn: " + strings.Join(h.zeroTexts, "; ") + "."
	}
	if len(h.missingTexts) > 0 {
		c += " Samples in which a hop's socket was not found (source \"missing\"), counted as 0: " +
			strings.Join(h.missingTexts, "; ") + "."
	}
	return c
}
