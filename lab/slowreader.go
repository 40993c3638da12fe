package lab

import (
	"errors"
	"fmt"
	"time"

	"github.com/slowlab/slowlab/loadgen"
)

// SlowReaderSpec is how a scenario's slow readers read (its slow_reader:
// block), for every experiment that has slow readers: the settings
// loadgen.SlowReader takes, validated by loadgen's rules.
type SlowReaderSpec struct {
	ReadRate Size     `yaml:"read_rate"` // bytes per second
	RcvBuf   Size     `yaml:"rcvbuf"`    // SO_RCVBUF, set before connect
	ReadSize Size     `yaml:"read_size"` // at most this many bytes per read
	Timeout  Duration `yaml:"timeout"`   // bounds each download
}

// PublishedSlowReader is the published slow reader at rate bytes/s: an
// 8 KiB receive buffer, 16 KiB reads, a 2-minute bound on each download.
func PublishedSlowReader(rate Size) SlowReaderSpec {
	return SlowReaderSpec{ReadRate: rate, RcvBuf: loadgen.DefaultSlowRcvBuf, ReadSize: loadgen.DefaultSlowReadSize,
		Timeout: Duration(2 * time.Minute)}
}

// Reader is the spec as loadgen takes it; the URL, metrics and the rest
// are the run's.
func (s SlowReaderSpec) Reader() loadgen.SlowReader {
	return loadgen.SlowReader{Rate: float64(s.ReadRate), RcvBuf: int(s.RcvBuf), ReadSize: int(s.ReadSize), Timeout: time.Duration(s.Timeout)}
}

// Validate checks the spec by loadgen's rules, naming each field by its
// YAML path (slow_reader.read_rate). A scenario's readers are always
// bounded: its timeout is more than 0 (loadgen's 0 is its own default).
func (s SlowReaderSpec) Validate() error {
	if s.Timeout <= 0 {
		return fmt.Errorf("slow_reader.timeout %s: allowed more than 0 up to 1h", time.Duration(s.Timeout))
	}
	return SettingPath("slow_reader.", s.Reader().Validate(), nil)
}

// SettingPath names a load generator's setting error (a
// *loadgen.SettingError) by its place in a scenario: prefix before the
// setting's name, renamed by names where the scenario calls it otherwise
// (stalled-reader's client.rate is loadgen's read_rate). Other errors, and
// nil, are returned as they are.
func SettingPath(prefix string, err error, names map[string]string) error {
	if err == nil {
		return nil
	}
	var se *loadgen.SettingError
	if !errors.As(err, &se) {
		return err
	}
	name := se.Setting
	if n, ok := names[name]; ok {
		name = n
	}
	return &loadgen.SettingError{Setting: prefix + name, Value: se.Value, Allowed: se.Allowed}
}
