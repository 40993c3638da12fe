package assess

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/slowlab/slowlab/internal/schema"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// File is what `slowlab assess` writes in its results directory: the
// stack it assessed and one object per probe.
const File = "assessment.json"

// SchemaVersion is the version of assessment.json's format this slowlab
// writes (its schema_version; internal/schema says how it is read).
const SchemaVersion = "1.0"

// assessmentFile is assessment.json: its schema_version, then the
// assessment's fields.
type assessmentFile struct {
	SchemaVersion string `json:"schema_version"`
	Assessment
}

// Assessment is assessment.json: what was assessed and each probe's
// verdict, in the order the probes ran.
type Assessment struct {
	Stack   string  `json:"stack"`
	Server  string  `json:"server"`
	Route   string  `json:"route"`
	BudgetS float64 `json:"budget_s"`
	TookS   float64 `json:"took_s"`
	// Shard is "I/N" when this process was shard I of N of a sharded
	// assessment (each holding its share of every level's clients, shard
	// 0 measuring /fast and giving the verdicts), started at StartAt
	// (RFC 3339); both empty otherwise.
	Shard   string `json:"shard,omitempty"`
	StartAt string `json:"start_at,omitempty"`
	// ShardRecord is what a shard records to prove it ran as the others
	// did; `slowlab assess --combine` checks the shards' records against
	// each other before it gives verdicts. Nil when not sharded.
	ShardRecord *ShardRecord `json:"shard_record,omitempty"`
	// CombinedShards is how many shards `slowlab assess --combine` judged
	// these verdicts over; 0 for one process's.
	CombinedShards int       `json:"combined_shards,omitempty"`
	Verdicts       []Verdict `json:"probes"`
}

// ShardRecord is one shard's proof of how it ran.
type ShardRecord struct {
	// Settings are the settings every shard must share, by name, and
	// SettingsHash the SHA-256 of them.
	Settings     map[string]string `json:"settings"`
	SettingsHash string            `json:"settings_hash"`
	// ClockOffsetMS is this shard's clock less the stack's, within
	// ClockErrorMS, measured from the second boundary of the stack's Date
	// header before the first slot; nil where it could not be measured.
	ClockOffsetMS *float64 `json:"clock_offset_ms,omitempty"`
	ClockErrorMS  *float64 `json:"clock_error_ms,omitempty"`
	ClockNote     string   `json:"clock_note,omitempty"`
}

// Verdict is one probe's outcome.
type Verdict struct {
	Probe string `json:"probe"`
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
	Fix    string `json:"fix"`
	FixDoc string `json:"fix_doc,omitempty"`
	// Absorbs is, for the readers' probes, what the path holds of the
	// response (predicted from configuration), or Unpredicted why not.
	Absorbs     *Absorbs `json:"path_absorbs,omitempty"`
	Unpredicted string   `json:"path_unpredicted,omitempty"`
	// Sure says how sure the threshold is (finish decides it): "confirmed"
	// (the level below it held and it degraded, each in two windows or
	// more with every client in place, none dissenting), "majority" (two
	// or more each side, a dissent outvoted), "once" (a side of one
	// window: the budget left no second), "unstable" (a level above the
	// threshold held by majority: the search ran out of rounds), "between"
	// (a gap between it and HeldInPlace, as a sharded assessment's powers
	// of two leave), "held" (no level degraded), "none" (no valid level).
	Sure string `json:"sure,omitempty"`
	// Windows is how many valid /fast windows the verdict rests on: those
	// at the threshold and at the level below it (at the largest level
	// held when none degraded).
	Windows int `json:"windows,omitempty"`
	// HeldInPlace is the largest level whose /fast held with every client
	// in place and the instrument valid, 0 for none: --fail-on passes a
	// bound only up to it.
	HeldInPlace int     `json:"held_in_place"`
	Levels      []Level `json:"levels"`
}

// LastLevel is the level that decided the threshold (the last window
// that degraded at ClientsToDegrade clients), else the last one run (nil
// without levels).
func (v Verdict) LastLevel() *Level {
	if v.ClientsToDegrade != nil {
		for i := len(v.Levels) - 1; i >= 0; i-- {
			if lv := &v.Levels[i]; lv.Clients == *v.ClientsToDegrade && lv.Degraded != "" {
				return lv
			}
		}
	}
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
	// AppCPUS and AppThrottledS are the app's CPU time and the time its
	// cgroup was throttled over the level (seconds), LevelS its length.
	AppCPUS         *float64 `json:"app_cpu_s,omitempty"`
	AppThrottledS   *float64 `json:"app_throttled_s,omitempty"`
	ProxyCPUS       *float64 `json:"proxy_cpu_s,omitempty"`
	ProxyThrottledS *float64 `json:"proxy_throttled_s,omitempty"`
	LevelS          float64  `json:"level_s"`
	Summary         string   `json:"summary"`
}

// Level is one level of a probe: its clients and what /fast did
// while they were in place.
type Level struct {
	Clients int `json:"clients"`
	// ShardClients is, in a sharded assessment, how many of the Clients
	// this shard ran (those numbered I, I+N, ...); nil otherwise.
	ShardClients *int    `json:"shard_clients,omitempty"`
	Placed       bool    `json:"clients_in_place"` // every client connected before /fast began
	StartS       float64 `json:"start_s"`          // from the probe's start
	EndS         float64 `json:"end_s"`            // the end of its /fast window
	// KeptS is how long past the window the clients were kept (a
	// connection probe's or the stalled readers' probe's last level, or
	// the one that degraded); nil when they were not.
	KeptS    *float64 `json:"kept_s,omitempty"`
	FastSent int      `json:"fast_sent"`
	FastOK   int      `json:"fast_ok"`
	FastFail int      `json:"fast_failed"`
	P50MS    float64  `json:"fast_p50_ms"`
	P95MS    float64  `json:"fast_p95_ms"`
	MaxMS    float64  `json:"fast_max_ms"`
	Degraded string   `json:"degraded,omitempty"` // the reason, "" when /fast held
	// FastTimeoutMS is the timeout of each of the level's /fast requests
	// (ms): one with no response within it failed. 0 when not
	// recorded (files written before the field, or no /fast measured).
	FastTimeoutMS float64 `json:"fast_timeout_ms,omitempty"`
	// Ends counts how the level's clients ended; for the connection
	// probes' last level, kept until the server ended them or the
	// assessment's idle maximum.
	Ends map[string]int `json:"client_ends"`
	// FirstLines are the response lines the server sent held
	// connections (a 408, say).
	FirstLines map[string]int `json:"server_first_lines,omitempty"`
	// HeldP50S and HeldMaxS are how long the connections were held.
	HeldP50S *float64 `json:"held_p50_s,omitempty"`
	HeldMaxS *float64 `json:"held_max_s,omitempty"`
	// FastBackS is, for stalled readers kept past the window, how long
	// after it /fast came back under the threshold with every one of
	// them still connected: the server freed what they held (a worker
	// timeout, a proxy's send_timeout) though they never saw it. Nil when
	// it did not come back while they were held, or was not watched.
	FastBackS *float64 `json:"fast_back_s,omitempty"`
	// Status is the level's outcome: "held", "degraded", "short" (fewer
	// of its clients in place than asked: it proves nothing) or
	// "invalid" (the load generator was throttled or late: repeated,
	// never a verdict, Invalid says why).
	Status  string `json:"status,omitempty"`
	Invalid string `json:"invalid,omitempty"`
	// Connected is how many of this process's clients were connected,
	// and not yet ended, when the /fast window began.
	Connected int `json:"clients_connected"`
	// AppConns and ProxyConns are the most connections the app's and
	// the proxy's processes held during the level, where they are seen.
	AppConns   *float64 `json:"app_connections,omitempty"`
	ProxyConns *float64 `json:"proxy_connections,omitempty"`
	// The load generator over the window: its CPU time, the time its
	// cgroup was throttled (nil where unreadable), and how far behind
	// its schedule its latest /fast request started.
	LoadgenCPUS       *float64 `json:"loadgen_cpu_s,omitempty"`
	LoadgenThrottledS *float64 `json:"loadgen_throttled_s,omitempty"`
	FastLagMaxMS      float64  `json:"fast_lag_max_ms"`
	// LateMS is, in a sharded assessment, how late this shard started the
	// level on its own clock.
	LateMS float64 `json:"late_ms,omitempty"`
}

// Absorbs is what the path from the app to a slow reader holds of
// a response, predicted from configuration, and the verdict the model's
// measured error allows: the path holds at least PredictedBytes x
// (1 - MarginUnder) and at most PredictedMostBytes (the most its buffers
// can grow to) x (1 + MarginOver). Fits is Verdict == AbsorbsFits (files
// written before Verdict have Fits alone).
type Absorbs struct {
	PredictedBytes int64  `json:"predicted_bytes"`
	Hops           string `json:"hops"`
	ResponseBytes  int64  `json:"response_bytes"`
	Fits           bool   `json:"fits"`
	// PredictedMostBytes, MarginUnder, MarginOver and Verdict are
	// additions: 0 and "" in files written before them.
	PredictedMostBytes int64   `json:"predicted_most_bytes,omitempty"`
	MarginUnder        float64 `json:"margin_under,omitempty"`
	MarginOver         float64 `json:"margin_over,omitempty"`
	Verdict            string  `json:"verdict,omitempty"`
}

// Verdicts of Absorbs: the response fits in the path even at the
// model's lowest error (a reader cannot hold a worker with it), does not
// fit even at its highest (the rest holds the app's send), or lies within
// the error (the model cannot tell).
const (
	AbsorbsFits      = pathmodel.Fits
	AbsorbsHolds     = pathmodel.Holds
	AbsorbsUncertain = pathmodel.Uncertain
)

// WriteAssessment replaces dir/assessment.json with a, atomically: a
// reader sees the old file or the new one whole.
func WriteAssessment(dir string, a Assessment) error {
	b, err := json.MarshalIndent(assessmentFile{SchemaVersion, a}, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", File, err)
	}
	err = recorder.ReplaceFile(dir, File, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, File), err)
	}
	return nil
}

// ReadAssessment reads dir/assessment.json. A missing file is an error
// wrapping fs.ErrNotExist; a file that does not parse, has a field this
// version does not know (at its version or an older one: a newer minor
// version's are ignored, with a note), is of a newer major version, or
// says something impossible (a probe without a name, a threshold above
// what was tried, levels out of order) is an error naming the file and
// what is wrong.
func ReadAssessment(dir string) (Assessment, error) {
	path := filepath.Join(dir, File)
	b, err := os.ReadFile(path)
	if err != nil {
		return Assessment{}, fmt.Errorf("read assessment: %w", err)
	}
	return parseAssessment(path, b)
}

// parseAssessment parses b, the file name's assessment.json; its errors
// start with name.
func parseAssessment(name string, b []byte) (Assessment, error) {
	var f assessmentFile
	if err := schema.DecodeJSON(name, b, SchemaVersion, &f); err != nil {
		return Assessment{}, err
	}
	a := f.Assessment
	if a.Verdicts == nil {
		return Assessment{}, fmt.Errorf("%s: probes: missing (want a list, one object per probe)", name)
	}
	for i, v := range a.Verdicts {
		if err := v.check(); err != nil {
			return Assessment{}, fmt.Errorf("%s: probes[%d] (%q): %w", name, i, v.Probe, err)
		}
	}
	return a, nil
}

// check refuses what a verdict cannot say.
func (v Verdict) check() error {
	switch {
	case v.Probe == "":
		return errors.New("probe: empty")
	case v.Tried < 0 || v.MaxClients < 0:
		return fmt.Errorf("clients_tried %d, max_clients %d: want 0 or more", v.Tried, v.MaxClients)
	case v.ClientsToDegrade != nil && (*v.ClientsToDegrade < 1 || *v.ClientsToDegrade > v.Tried):
		return fmt.Errorf("clients_to_degrade %d: want 1 up to clients_tried %d", *v.ClientsToDegrade, v.Tried)
	}
	if a := v.Absorbs; a != nil {
		switch {
		case a.Verdict != "" && a.Verdict != AbsorbsFits && a.Verdict != AbsorbsHolds && a.Verdict != AbsorbsUncertain:
			return fmt.Errorf("path_absorbs: verdict %q, want %s, %s or %s", a.Verdict, AbsorbsFits, AbsorbsUncertain, AbsorbsHolds)
		case a.Verdict != "" && a.Fits != (a.Verdict == AbsorbsFits):
			return fmt.Errorf("path_absorbs: fits %v with verdict %s", a.Fits, a.Verdict)
		case a.PredictedMostBytes != 0 && a.PredictedMostBytes < a.PredictedBytes:
			return fmt.Errorf("path_absorbs: predicted_most_bytes %d under predicted_bytes %d", a.PredictedMostBytes, a.PredictedBytes)
		case a.MarginUnder < 0 || a.MarginUnder >= 1 || a.MarginOver < 0:
			return fmt.Errorf("path_absorbs: margin_under %v, margin_over %v: want 0 up to below 1, and 0 or more", a.MarginUnder, a.MarginOver)
		}
	}
	for i, lv := range v.Levels {
		switch {
		case lv.Clients < 1:
			return fmt.Errorf("levels[%d]: clients %d, want 1 or more", i, lv.Clients)
		case i > 0 && lv.StartS < v.Levels[i-1].StartS:
			return fmt.Errorf("levels[%d]: started at %g s, before levels[%d] at %g s: want levels in the order they ran", i, lv.StartS, i-1, v.Levels[i-1].StartS)
		case lv.Clients > v.Tried:
			return fmt.Errorf("levels[%d]: %s, over clients_tried %d", i, report.Count(lv.Clients, "client"), v.Tried)
		case lv.FastOK < 0 || lv.FastFail < 0 || lv.FastOK+lv.FastFail > lv.FastSent:
			return fmt.Errorf("levels[%d]: /fast %d ok and %d failed of %d sent", i, lv.FastOK, lv.FastFail, lv.FastSent)
		case lv.FastTimeoutMS < 0:
			return fmt.Errorf("levels[%d]: fast_timeout_ms %g: want 0 (not recorded) or more", i, lv.FastTimeoutMS)
		}
	}
	return nil
}
