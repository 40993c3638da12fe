package loadgen

import (
	"strconv"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
)

// The ranges of a slow reader's settings: beyond them a value is a typo,
// not a slow client. These are the one set of rules every experiment with
// slow readers validates its scenario by (lab.SlowReaderSpec).
const (
	MinSlowRate     = 1 << 10 // bytes per second
	MaxSlowRate     = 1 << 30
	MaxSlowRcvBuf   = 64 << 20
	MaxSlowReadSize = 16 << 20
	MaxSlowTimeout  = time.Hour
)

// The names SettingError gives a slow reader's settings: a scenario's.
const (
	SettingReadRate   = "read_rate"
	SettingRcvBuf     = "rcvbuf"
	SettingReadSize   = "read_size"
	SettingTimeout    = "timeout"
	SettingStall      = "stall"
	SettingStallAfter = "stall_after"
)

// SettingError is a setting a load generator cannot run with: its name
// (Setting*), its value as written in a scenario, and what is allowed.
// A caller that names the setting otherwise (a YAML path, a flag) renames
// Setting and keeps the rest.
type SettingError struct {
	Setting, Value, Allowed string
}

func (e *SettingError) Error() string { return e.Setting + " " + e.Value + ": " + e.Allowed }

// Validate reports settings that cannot run, or that are out of the
// slow readers' ranges, as a *SettingError.
func (s SlowReader) Validate() error {
	bad := func(setting, value, allowed string) error { return &SettingError{setting, value, allowed} }
	switch {
	case s.RcvBuf < 0 || s.RcvBuf > MaxSlowRcvBuf:
		return bad(SettingRcvBuf, bytesize.Format(int64(s.RcvBuf)), "allowed 0 (the kernel's) to 64m")
	case s.ReadSize < 1 || s.ReadSize > MaxSlowReadSize:
		return bad(SettingReadSize, bytesize.Format(int64(s.ReadSize)), "allowed 1 byte to 16m")
	case !(s.Rate >= MinSlowRate) || s.Rate > MaxSlowRate:
		return bad(SettingReadRate, rateText(s.Rate), "allowed 1k to 1g bytes/s")
	case s.Timeout < 0:
		return bad(SettingTimeout, s.Timeout.String(), "allowed 0 (10m) or more, up to 1h")
	case s.Timeout > MaxSlowTimeout:
		return bad(SettingTimeout, s.Timeout.String(), "allowed up to 1h")
	case s.Stall < 0:
		return bad(SettingStall, s.Stall.String(), "allowed 0 (no stall) or more")
	case s.StallAfter < 0:
		return bad(SettingStallAfter, strconv.FormatInt(s.StallAfter, 10), "allowed 0 or more bytes")
	case s.Stall > 0 && s.Timeout > 0 && s.Timeout <= s.Stall:
		return bad(SettingTimeout, s.Timeout.String(), "must outlast the "+s.Stall.String()+" stall")
	}
	return nil
}

// rateText writes a rate as a size when it is a whole number of bytes.
func rateText(r float64) string {
	if r == float64(int64(r)) {
		return bytesize.Format(int64(r))
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}
