package assess

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"
)

// A shard proves how it ran: it records the settings every shard must
// share (and their hash), its clock's offset from the stack's, and, per
// level, its share of the clients, how many were connected when the window
// began and how late it started the level. `slowlab assess --combine`
// (combine.go) checks the shards' records against each other.

// shardSettings are the settings every shard of one assessment must
// share, by name.
func (c *Config) shardSettings() map[string]string {
	_, n := c.shardOf()
	m := map[string]string{
		"shards": fmt.Sprint(n), "start_at": c.StartAt, "probes": strings.Join(strs(c.Probes), ","),
		"max_clients": fmt.Sprint(c.MaxClients), "window": time.Duration(c.Window).String(),
		"fast_rate": fmt.Sprint(c.FastRate), "offset": time.Duration(c.Offset).String(),
		"idle_max": time.Duration(c.IdleMax).String(), "budget": time.Duration(c.Budget).String(),
		"upload_size": fmt.Sprint(int64(c.UploadSize)), "server": c.Server,
	}
	if e := c.StackSpec.External; e != nil {
		m["fast_url"], m["large_url"], m["upload_url"], m["stream_url"], m["route"] = e.FastURL, e.LargeURL, e.UploadURL, e.StreamURL, string(e.Route)
	}
	return m
}

// settingsHash is the SHA-256 of settings, "name=value" lines in name
// order.
func settingsHash(settings map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		fmt.Fprintf(&b, "%s=%s\n", k, settings[k])
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// shardRecord is this shard's record before its first slot: its settings
// and its clock's offset from the stack's, measured against fastURL until
// before.
func (c *Config) shardRecord(ctx context.Context, fastURL string, before time.Time) *ShardRecord {
	s := c.shardSettings()
	rec := &ShardRecord{Settings: s, SettingsHash: settingsHash(s)}
	bctx, cancel := context.WithDeadline(ctx, before)
	defer cancel()
	off, errMS, err := dateOffset(bctx, fastURL)
	if err != nil {
		rec.ClockNote = err.Error()
		return rec
	}
	rec.ClockOffsetMS, rec.ClockErrorMS = &off, &errMS
	return rec
}

// dateProbeEvery is how often dateOffset asks the stack for its Date.
const dateProbeEvery = 5 * time.Millisecond

// dateOffset measures this machine's clock less the server's, in ms, and
// the error of the measure, from the second boundary of the server's
// Date header (RFC 9110: the time the response was generated, to the
// second). It asks url one request at a time until Date moves to the next
// second between two answers: the server's clock passed that whole second
// after the first request was sent and before the second's answer came
// back, so the offset is that interval less the second, and its error
// half the interval. A second and a bit of requests at most.
func dateOffset(ctx context.Context, url string) (offsetMS, errMS float64, err error) {
	client := &http.Client{Timeout: time.Second}
	var prevSent, prevDate time.Time
	for ctx.Err() == nil {
		sent := time.Now()
		date, err := serverDate(ctx, client, url)
		got := time.Now()
		if err != nil {
			return 0, 0, fmt.Errorf("clock offset not measured: %w", err)
		}
		if !prevDate.IsZero() && date.Sub(prevDate) == time.Second {
			// The boundary (date, server time) fell in [prevSent, got]
			// local time.
			mid := prevSent.Add(got.Sub(prevSent) / 2)
			return msf(mid.Sub(date)), msf(got.Sub(prevSent) / 2), nil
		}
		prevSent, prevDate = sent, date
		select {
		case <-ctx.Done():
		case <-time.After(dateProbeEvery):
		}
	}
	return 0, 0, fmt.Errorf("clock offset not measured: no second boundary of the stack's Date header seen before the first slot")
}

// serverDate is the Date header of a GET of url.
func serverDate(ctx context.Context, client *http.Client, url string) (time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	resp.Body.Close()
	d := resp.Header.Get("Date")
	if d == "" {
		return time.Time{}, fmt.Errorf("%s sends no Date header", url)
	}
	t, err := http.ParseTime(d)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: Date %q: %w", url, d, err)
	}
	return t, nil
}
