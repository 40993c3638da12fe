// Package mdlink finds the relative links of Markdown text, for the
// repository's link checks: every tracked page's links name a file of the
// repository (docs), and every shipped page's a file of the release
// tarball (scripts/package).
package mdlink

import (
	"regexp"
	"strings"
)

// link is a markdown link's target: [text](target); code is an inline
// code span or a fenced block, whose text is no link.
var (
	link = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	code = regexp.MustCompile("(?s)```.*?```|`[^`\n]*`")
)

// Link is a relative link: Target as written, Path without its #fragment
// (relative to the page's directory).
type Link struct{ Target, Path string }

// Relative returns the relative links of the markdown text, in order:
// not a URL (scheme://, mailto:), not an anchor of the page itself, not
// in code.
func Relative(text string) []Link {
	var out []Link
	for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(text, ""), -1) {
		target := m[1]
		if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
			continue
		}
		path, _, _ := strings.Cut(target, "#")
		out = append(out, Link{Target: target, Path: path})
	}
	return out
}
