package appserver

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/slowlab/slowlab/loadgen"
)

// TestRedirect: /redirect answers 302 (or the 301 asked for) with the
// Location it was given and its Server-Timing, following to the
// resource on the same origin; a bad target or status is a 400 naming it.
func TestRedirect(t *testing.T) {
	o := DefaultOptions()
	o.Model = ModelAsync
	_, base, _ := startServer(t, o)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for path, want := range map[string]struct {
		code int
		loc  string
	}{
		"/redirect?to=%2Fbytes%3Fn%3D10":                           {302, "/bytes?n=10"},
		"/redirect?status=301&to=http%3A%2F%2Fb.test%3A81%2Fbytes": {301, "http://b.test:81/bytes"},
	} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		_, ok := loadgen.ParseServerTiming(resp.Header.Get("Server-Timing"), "app")
		if resp.StatusCode != want.code || resp.Header.Get("Location") != want.loc || !ok {
			t.Errorf("%s: %d Location %q Server-Timing %q, want %d %q with a timing", path, resp.StatusCode, resp.Header.Get("Location"),
				resp.Header.Get("Server-Timing"), want.code, want.loc)
		}
	}
	resp, err := http.Get(base + "/redirect?to=%2Fbytes%3Fn%3D10")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(b) != 10 {
		t.Errorf("followed: %d, %d bytes; want 200 and the 10-byte resource", resp.StatusCode, len(b))
	}
	wantBadRequests(t, client, base, map[string]string{
		"/redirect":                       `to: missing (want a path such as /bytes?n=1024 or an http(s) URL)`,
		"/redirect?to=ftp%3A%2F%2Fa%2Fb":  `to: "ftp://a/b": want a path starting with / or an http(s) URL with a host`,
		"/redirect?to=%2F%2Fevil.test%2F": `to: "//evil.test/": want a path starting with / or an http(s) URL with a host`,
		"/redirect?to=%2F&status=307":     `status "307": want 301 or 302`,
	})
}

// TestPage: /page refers to its n sub-resources, the odd ones on the
// cross origin, each a /bytes of the size asked with the sub-resources'
// work; every one it names is served here; bad parameters are a 400.
func TestPage(t *testing.T) {
	o := DefaultOptions()
	o.Model = ModelAsync
	_, base, _ := startServer(t, o)
	resp, err := http.Get(base + "/page?n=5&size=7&cross=http%3A%2F%2Fcdn.test%3A8080&sub_work=1ms")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srcs := regexp.MustCompile(`<img src="([^"]*)">`).FindAllStringSubmatch(string(b), -1)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" || len(srcs) != 5 {
		t.Fatalf("%d %q: %d sub-resources, want 200, HTML and 5:\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), len(srcs), b)
	}
	for i, m := range srcs {
		src := strings.ReplaceAll(m[1], "&amp;", "&")
		local, ok := strings.CutPrefix(src, "http://cdn.test:8080")
		if ok != (i%2 == 1) || !strings.HasPrefix(local, "/bytes?n=7&i=") || !strings.HasSuffix(local, "&work=1ms") {
			t.Errorf("sub-resource %d: %q", i, src)
			continue
		}
		r, err := http.Get(base + local)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || len(body) != 7 {
			t.Errorf("sub-resource %d %s: %d, %d bytes", i, local, r.StatusCode, len(body))
		}
	}
	wantBadRequests(t, http.DefaultClient, base, map[string]string{
		"/page?n=1001&size=1":                       `n "1001": want 0..1000 sub-resources`,
		"/page?n=1&size=x":                          `size "x": want 0..1073741824 bytes`,
		"/page?n=1&size=1&cross=http%3A%2F%2Fa%2Fp": `cross "http://a/p": want an http(s) origin, scheme://host:port`,
		"/page?n=1&size=1&sub_work=1h":              `sub_work "1h", sub_work_kind "": want a duration from 0 to 10s and sleep or cpu`,
	})
}

// wantBadRequests GETs each path of base with client and wants a 400
// whose body is the message given for it.
func wantBadRequests(t *testing.T, client *http.Client, base string, want map[string]string) {
	t.Helper()
	for path, msg := range want {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || strings.TrimSpace(string(b)) != msg {
			t.Errorf("%s: %d %q, want 400 %q", path, resp.StatusCode, b, msg)
		}
	}
}
