package report

import (
	"strconv"
	"strings"
)

// How figures and tables spell names and sizes.

// Slug makes s safe as a file name: lower-case letters, digits and dashes.
func Slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.TrimSuffix(b.String(), "-")
}

// SizeText formats a response size: "16 MiB", "512 KiB", "1.5 MiB".
func SizeText(b int64) string {
	if b >= 1<<20 && b%(1<<20) != 0 {
		return MiBText(b) + " MiB"
	}
	return ByteSize(int(b))
}

// MiBText writes bytes as a number of MiB: exact when it is a whole
// number of KiB ("0.5", "16"), else three significant digits.
func MiBText(b int64) string {
	v := float64(b) / (1 << 20)
	if b%1024 == 0 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Count is n of noun, the noun plural unless n is 1: "1 figure", "3
// figures".
func Count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
