// Package bytesize owns the one syntax of byte sizes slowlab reads and
// writes, NGINX's ("16k", "32m", "1g", "4096"): scenarios, flags, the
// embedded proxy's options and results' run ids all parse and format
// sizes here.
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Syntax says which sizes Parse accepts, for error messages.
const Syntax = "a whole number of bytes with an optional unit k, m or g (powers of 1024, as in nginx; KiB, MiB, GiB and kb, mb, gb also accepted), e.g. 16k"

// units maps a lower-case unit to its multiplier. Units are binary, as
// in nginx: "16k" is 16384 bytes.
var units = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
}

// Parse reads a size in bytes written as in nginx ("16k", "32m", "1g",
// "4096") or with a binary unit ("64KiB"). Units are case-insensitive and
// always powers of 1024; signs, fractions and spaces are rejected.
func Parse(s string) (int64, error) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	mult, ok := units[strings.ToLower(s[i:])]
	if i == 0 || !ok {
		return 0, fmt.Errorf("size %q: allowed %s", s, Syntax)
	}
	n, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || n > (1<<63-1)/mult {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return n * mult, nil
}

// Format writes n the way nginx configs do: with the largest unit that
// divides it exactly ("16k", "32m"), or in bytes. A negative n, which no
// size is but an error may have to quote, is written as a plain number.
func Format(n int64) string {
	switch {
	case n <= 0:
		return strconv.FormatInt(n, 10)
	case n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + "g"
	case n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + "m"
	case n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}
