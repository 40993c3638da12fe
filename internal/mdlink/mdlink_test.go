package mdlink

import (
	"reflect"
	"testing"
)

// Relative keeps relative links, fragment cut from Path, and leaves out
// URLs, mail, the page's own anchors and what is in code.
func TestRelative(t *testing.T) {
	text := "[ok](../exporter/README.md) [web](https://example.invalid/x) [here](#a) [mail](mailto:a@example.invalid)\n" +
		"[sec](proxies.md#nginx) [dir](../alerts/) `re[a](b)`\n```\n[fenced](c.md)\n```\n[`code text`](d.md)"
	want := []Link{{"../exporter/README.md", "../exporter/README.md"}, {"proxies.md#nginx", "proxies.md"}, {"../alerts/", "../alerts/"}, {"d.md", "d.md"}}
	if got := Relative(text); !reflect.DeepEqual(got, want) {
		t.Errorf("Relative: %q, want %q", got, want)
	}
}
