package lab

import (
	"fmt"
	"strings"
	"time"
)

// FastSpec is the open-loop /fast load the experiments run beside their
// slow clients (slow-client, slow-upload, idle-connections): Rate requests a
// second for Duration, each on a new connection, starting Offset after the
// slow clients, each given Timeout.
type FastSpec struct {
	Path     string   `yaml:"path"`
	Rate     float64  `yaml:"rate"` // requests per second
	Duration Duration `yaml:"duration"`
	Offset   Duration `yaml:"offset"` // after the slow clients start
	Timeout  Duration `yaml:"timeout"`
}

// Validate names the first field that cannot be used by its YAML path.
func (f FastSpec) Validate() error {
	switch {
	case !strings.HasPrefix(f.Path, "/"):
		return fmt.Errorf("fast.path %q: must start with /", f.Path)
	case !(f.Rate > 0) || f.Rate > 10000:
		return fmt.Errorf("fast.rate %v: allowed more than 0 up to 10000 requests/s", f.Rate)
	case f.Duration <= 0:
		return fmt.Errorf("fast.duration %s: must be more than 0", time.Duration(f.Duration))
	case time.Duration(f.Duration) > time.Hour:
		return fmt.Errorf("fast.duration %s: at most 1h", time.Duration(f.Duration))
	case f.Offset < 0 || time.Duration(f.Offset) > time.Hour:
		return fmt.Errorf("fast.offset %s: allowed 0 up to 1h", time.Duration(f.Offset))
	case f.Timeout <= 0 || time.Duration(f.Timeout) > time.Hour:
		return fmt.Errorf("fast.timeout %s: allowed more than 0 up to 1h", time.Duration(f.Timeout))
	}
	return nil
}
