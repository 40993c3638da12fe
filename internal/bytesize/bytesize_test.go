package bytesize

import (
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "4096": 4096, "100b": 100, "16k": 16 << 10, "16K": 16 << 10, "64KiB": 64 << 10,
		"64kb": 64 << 10, "32m": 32 << 20, "32MiB": 32 << 20, "1g": 1 << 30, "2GB": 2 << 30,
		"8589934591g": 8589934591 << 30,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "k", "-1", "+1", "1.5m", "16 k", " 16k", "16kk", "16t", "16ki", "0x10", "8589934592g", "99999999999999999999"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d; want an error", in, got)
		}
	}
	_, err := Parse("16q")
	if want := `size "16q": allowed ` + Syntax; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1", 1000: "1000", 1024: "1k", 1536: "1536", 16 << 10: "16k", 32 << 20: "32m",
		3 << 30: "3g", 1<<30 + 1<<10: "1048577k", -1: "-1", -1024: "-1024"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzParse: Parse never panics, accepts only what it documents, and
// what Format writes parses back to the same number. Seeded from
// testdata/seeds.txt, one size (or near miss) a line.
func FuzzParse(f *testing.F) {
	b, err := os.ReadFile("testdata/seeds.txt")
	if err != nil {
		f.Fatal(err)
	}
	seeds := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(seeds) < 10 {
		f.Fatalf("testdata/seeds.txt: %d seeds, want at least 10", len(seeds))
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := Parse(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("Parse(%q) = %d < 0", s, n)
		}
		if strings.ContainsAny(s, " \t+-.") {
			t.Fatalf("Parse(%q) accepted a sign, space or fraction", s)
		}
		back, err := Parse(Format(n))
		if err != nil || back != n {
			t.Fatalf("round trip %q -> %d -> %q -> %d, %v", s, n, Format(n), back, err)
		}
	})
}
