package loadgen

import (
	"strconv"
	"strings"
	"time"
)

// ParseServerTiming returns the dur of metric name in a Server-Timing header
// value (RFC: `app;dur=1.5, db;dur=0.2;desc="x"`), in milliseconds.
func ParseServerTiming(header, name string) (time.Duration, bool) {
	for _, metric := range strings.Split(header, ",") {
		parts := strings.Split(metric, ";")
		if !strings.EqualFold(strings.TrimSpace(parts[0]), name) {
			continue
		}
		for _, p := range parts[1:] {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(k), "dur") {
				continue
			}
			ms, err := strconv.ParseFloat(strings.Trim(strings.TrimSpace(v), `"`), 64)
			if err != nil || !(ms >= 0 && ms <= 1e9) {
				return 0, false
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return 0, false
}
