package latencygap

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSubresources reads testdata/page/page.html: the stylesheet, the
// script and the images a browser loads, resolved against the
// document's URL, not the link nor the data: URL.
func TestSubresources(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "page", "page.html"))
	if err != nil {
		t.Fatal(err)
	}
	base, _ := url.Parse("http://server.slowlab.test:80/page?n=2")
	got, err := subresources(strings.NewReader(string(b)), base)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"http://server.slowlab.test:80/style.css", "https://cdn.slowlab.test:8443/app.js",
		"http://server.slowlab.test:80/bytes?n=1024&i=0", "http://origin2.slowlab.test:8080/bytes?n=1024&i=1",
		"http://server.slowlab.test:80/relative.png"}
	if len(got) != len(want) {
		t.Fatalf("%d sub-resources %v, want %v", len(got), got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("sub-resource %d: %s, want %s", i, got[i], want[i])
		}
	}
}

// TestSubresourcesBounds: more sub-resources than kept, or a reference
// longer than kept, is an error naming the bound.
func TestSubresourcesBounds(t *testing.T) {
	base, _ := url.Parse("http://a.test/")
	many := strings.Repeat(`<img src="/x">`, maxSubresources+1)
	if got, err := subresources(strings.NewReader(many), base); err == nil || len(got) != maxSubresources ||
		err.Error() != "document: more than 200 sub-resources" {
		t.Errorf("%d sub-resources: %d kept, %v", maxSubresources+1, len(got), err)
	}
	long := `<img src="/` + strings.Repeat("x", maxURLBytes) + `">`
	if _, err := subresources(strings.NewReader(long), base); err == nil || !strings.Contains(err.Error(), "at most 2048") {
		t.Errorf("a long src: %v", err)
	}
}

// FuzzSubresources: any document gives at most maxSubresources absolute
// http(s) URLs, each within maxURLBytes of its reference, or an error.
func FuzzSubresources(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "page", "page.html"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	f.Add(`<img src="//x.test/a"><link href=" /b ">`)
	f.Add(`<img src="http://[::1">`)
	base, _ := url.Parse("http://server.slowlab.test:80/page")
	f.Fuzz(func(t *testing.T, doc string) {
		got, _ := subresources(strings.NewReader(doc), base)
		if len(got) > maxSubresources {
			t.Fatalf("%d sub-resources kept", len(got))
		}
		for _, u := range got {
			if (u.Scheme != "http" && u.Scheme != "https") || !u.IsAbs() {
				t.Fatalf("kept %q", u)
			}
		}
	})
}
