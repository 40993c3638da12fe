package latencygap

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Bounds of what subresources keeps of a document.
const (
	maxDocumentBytes = 1 << 20 // read at most this much HTML
	maxSubresources  = MaxPageResources
	maxURLBytes      = 2048
)

// subresources returns the URLs a document refers to as a browser loads
// them at once, in document order: the src of img, script, iframe, audio,
// video and source elements and the href of link elements (stylesheets,
// icons, preloads), resolved against base, http and https ones only.
// It reads at most maxDocumentBytes of r and keeps at most
// maxSubresources URLs of at most maxURLBytes each; a document with more
// is an error naming the bound, as is one whose references are not URLs.
func subresources(r io.Reader, base *url.URL) ([]*url.URL, error) {
	z := html.NewTokenizer(io.LimitReader(r, maxDocumentBytes))
	var out []*url.URL
	for {
		switch z.Next() {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return out, fmt.Errorf("document: %w", err)
			}
			return out, nil
		case html.StartTagToken, html.SelfClosingTagToken:
		default:
			continue
		}
		name, hasAttr := z.TagName()
		want := ""
		switch string(name) {
		case "img", "script", "iframe", "audio", "video", "source", "embed":
			want = "src"
		case "link":
			want = "href"
		}
		for hasAttr && want != "" {
			var k, v []byte
			k, v, hasAttr = z.TagAttr()
			if string(k) != want || len(v) == 0 {
				continue
			}
			if len(v) > maxURLBytes {
				return out, fmt.Errorf("document: a %s %s of %d bytes: at most %d", name, want, len(v), maxURLBytes)
			}
			u, err := base.Parse(strings.TrimSpace(string(v)))
			if err != nil {
				return out, fmt.Errorf("document: %s %s %q is not a URL", name, want, v)
			}
			if u.Scheme != "http" && u.Scheme != "https" {
				continue
			}
			if len(out) == maxSubresources {
				return out, fmt.Errorf("document: more than %d sub-resources", maxSubresources)
			}
			out = append(out, u)
		}
	}
}
