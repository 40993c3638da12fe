package lab

import (
	"fmt"
	"strconv"
	"time"

	"github.com/slowlab/slowlab/internal/bytesize"
	"github.com/slowlab/slowlab/internal/cliflag"
)

// SizeFlag is a flag for one Size field: 16m, 512k, 1048576. Bind it as
// fs.Var((*lab.SizeFlag)(&c.Size), ...).
type SizeFlag Size

func (s *SizeFlag) String() string { return bytesize.Format(int64(*s)) }

// Set implements flag.Value.
func (s *SizeFlag) Set(v string) error {
	n, err := bytesize.Parse(v)
	if err != nil {
		return fmt.Errorf("%q: want %s", v, bytesize.Syntax)
	}
	*s = SizeFlag(n)
	return nil
}

// DurationFlag is a flag for one Duration field: a Go duration (250ms,
// 20s, 1m30s) or a plain number of seconds (60, 0.5). Bind it as
// fs.Var((*lab.DurationFlag)(&c.Wait), ...).
type DurationFlag Duration

func (d *DurationFlag) String() string { return time.Duration(*d).String() }

// Set implements flag.Value.
func (d *DurationFlag) Set(v string) error {
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		*d = DurationFlag(s * float64(time.Second))
		return nil
	}
	t, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("%q: want a duration such as 250ms or 20s, or a number of seconds", v)
	}
	*d = DurationFlag(t)
	return nil
}

// SizesFlag is a flag of comma-separated byte sizes (k, m, g suffixes)
// into *to; example is shown in its error. The experiment's Validate
// checks the range.
func SizesFlag(to *[]Size, example string) *cliflag.List[Size] {
	return &cliflag.List[Size]{To: to, Want: "sizes, comma-separated, e.g. " + example, Parse: func(s string) (Size, error) {
		n, err := bytesize.Parse(s)
		return Size(n), err
	}}
}

// NamesFlag is a flag of comma-separated names (server models, routes,
// modes) into *to, kept as given: the experiment's Validate checks them.
func NamesFlag[T ~string](to *[]T) *cliflag.List[T] {
	return &cliflag.List[T]{To: to, Parse: func(s string) (T, error) { return T(s), nil }}
}
