package main

import (
	"fmt"
	"strconv"
	"strings"
)

// parseByteSize reads a byte size: a plain number of bytes or one with a k, m or
// g suffix (KiB, MiB, GiB; "KiB", "MiB", "GiB" and "kb"-style spellings too).
func parseByteSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'k':
			mult, t = 1<<10, t[:n-1]
		case 'm':
			mult, t = 1<<20, t[:n-1]
		case 'g':
			mult, t = 1<<30, t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("size %q: want bytes as N, Nk, Nm or Ng", s)
	}
	return v * mult, nil
}

func byteSizeFlag(name, s string) (int64, error) {
	v, err := parseByteSize(s)
	if err != nil {
		return 0, usagef("--%s %q: want bytes as N, Nk, Nm or Ng (KiB, MiB, GiB)", name, s)
	}
	return v, nil
}
