package proxy

import (
	"strings"
	"testing"
)

func TestProxyParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "100b": 100, "16k": 16 << 10, "16K": 16 << 10, "64KiB": 64 << 10,
		"64kb": 64 << 10, "32m": 32 << 20, "32MiB": 32 << 20, "1g": 1 << 30, "2GB": 2 << 30,
		"8589934591g": 8589934591 << 30,
	} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "+1", "1.5m", "16 k", " 16k", "16kk", "16t", "16ki", "0x10", "8589934592g", "99999999999999999999"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d; want an error", in, got)
		}
	}
	_, err := ParseSize("16q")
	if want := `size "16q": allowed ` + SizeSyntax; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestProxyFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 1000: "1000", 1024: "1k", 1536: "1536", 16 << 10: "16k", 32 << 20: "32m", 3 << 30: "3g", 1<<30 + 1<<10: "1048577k"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParseSize: ParseSize never panics, accepts only what it documents,
// and what FormatSize writes parses back to the same number.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "16k", "32m", "1g", "64KiB", "4096", "-1", "1.5m", "", "k", "99999999999999999999g", "16 k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("ParseSize(%q) = %d < 0", s, n)
		}
		if strings.ContainsAny(s, " \t+-.") {
			t.Fatalf("ParseSize(%q) accepted a sign, space or fraction", s)
		}
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Fatalf("round trip %q -> %d -> %q -> %d, %v", s, n, FormatSize(n), back, err)
		}
	})
}
