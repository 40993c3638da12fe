package report

import "fmt"

// SetTitle replaces the part's heading with title; its anchor stays the
// title NewPart was given, so a heading that names what the results are
// of (a server, a stack) leaves the part's link the same.
func (p *Part) SetTitle(title string) { p.s.Title = title }

// Note adds a paragraph to the part, after what it holds so far: a
// remark on the results, not something left out (Skip records that, in
// Report.Notes too).
func (p *Part) Note(format string, args ...any) {
	p.add(block{Note: fmt.Sprintf(format, args...)})
}
