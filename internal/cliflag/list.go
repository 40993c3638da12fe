package cliflag

import (
	"fmt"
	"strings"
)

// List is every list flag's type: comma-separated values, or with Repeat
// one value per use of the flag. The values given replace *To (its
// default); with Repeat the first use replaces it and the next ones add
// to it. Parse reads one value. A value given twice (equal once parsed,
// so "1" and "1%" are one loss) is refused, naming it: a list runs each
// of its values once.
type List[T comparable] struct {
	To    *[]T
	Parse func(string) (T, error)
	// Want says what a value looks like ("sizes, comma-separated, e.g.
	// 4m,16m"); a parse error then reads `"V": want WANT`, else `"V":
	// ` and Parse's error.
	Want   string
	Repeat bool
	used   bool // with Repeat: *To holds what was given
	texts  []string
}

// String implements flag.Value; empty, so that --help shows the default
// in the flag's own usage text.
func (l *List[T]) String() string { return "" }

// Set implements flag.Value.
func (l *List[T]) Set(v string) error {
	parts := []string{v}
	if !l.Repeat {
		parts = strings.Split(v, ",")
	}
	var out []T
	texts := l.texts
	if l.Repeat && l.used {
		out = *l.To
	} else {
		texts = nil
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return fmt.Errorf("%q: an empty value", v)
		}
		x, err := l.Parse(p)
		switch {
		case err != nil && l.Want != "":
			return fmt.Errorf("%q: want %s", v, l.Want)
		case err != nil:
			return fmt.Errorf("%q: %w", v, err)
		}
		for i, o := range out {
			if o != x {
				continue
			}
			switch {
			case l.Repeat && texts[i] == p:
				return fmt.Errorf("%q: given twice", v)
			case texts[i] == p:
				return fmt.Errorf("%q: %s given twice", v, p)
			}
			return fmt.Errorf("%q: %s given twice (as %s)", v, p, texts[i])
		}
		out, texts = append(out, x), append(texts, p)
	}
	*l.To, l.texts, l.used = out, texts, true
	return nil
}

// Strings is a repeatable string flag into *to, each value once.
func Strings(to *[]string) *List[string] {
	return &List[string]{To: to, Parse: func(s string) (string, error) { return s, nil }, Repeat: true}
}
