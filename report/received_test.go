package report

import (
	"image/color"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ReceivedFixture is a ReceivedBytes of three conditions, the middle one
// without downloads: "row-a" (4 MiB) with two complete downloads and a cut
// one, "row-c" (8 MiB) with one cut download; the kind "never" has none.
// It is exported for the external tests (received_report_test.go).
func ReceivedFixture() *ReceivedBytes {
	const mib = 1 << 20
	return &ReceivedBytes{Name: "pets-bytes", Title: "Bytes per pet", Caption: "Every pet's bytes.", XLabel: "MiB",
		Width: 8 * vg.Inch, Taller: vg.Inch, Room: 1.5, SizeLine: color.Gray{0x99}, SizeFill: color.Gray{0xea},
		Kinds: []DownloadKind{
			{Name: "whole", Color: ColorAt(0)},
			{Name: "cut", Color: ColorAt(1), Shape: draw.TriangleGlyph{}},
			{Name: "never", Color: ColorAt(2), Shape: draw.BoxGlyph{}},
		},
		Rows: []DownloadRow{
			{Label: "row-a", Size: 4 * mib, Downloads: []Received{{4 * mib, 0}, {mib, 1}, {4 * mib, 0}}},
			{Label: "row-b", Size: 2 * mib},
			{Label: "row-c", Size: 8 * mib, Downloads: []Received{{mib / 2, 1}}},
		},
		Left: 4}
}

// TestReceivedBytes: a row per condition with downloads and the value axis
// to Room times the largest size (received_report_test.go checks the
// figure drawn).
func TestReceivedBytes(t *testing.T) {
	r := ReceivedFixture()
	f := r.figure()
	if f == nil {
		t.Fatal("no figure")
	}
	if want := RowsHeight(2) + vg.Inch; f.height != want || f.width != 8*vg.Inch {
		t.Errorf("size %v x %v, want %v x %v (two rows, an inch taller)", f.width, f.height, 8*vg.Inch, want)
	}
	if p := f.panels[0]; p.X.Min != 0 || p.X.Max != 8*1.5 {
		t.Errorf("value axis %v to %v, want 0 to 12 (8 MiB times Room)", p.X.Min, p.X.Max)
	}
}

// TestReceivedBytesOneLeft: one download left out is said in the
// singular ("1 download ... is left out"), several in the plural.
func TestReceivedBytesOneLeft(t *testing.T) {
	r := ReceivedFixture()
	for left, want := range map[int]string{1: " 1 download of runs that did not end ok is left out.", 4: " 4 downloads of runs that did not end ok are left out."} {
		r.Left = left
		if got := r.figure().caption; got != r.Caption+want {
			t.Errorf("%d left out: caption %q, want %q", left, got, r.Caption+want)
		}
	}
}

// TestReceivedBytesNothing: without a download there is no figure, with
// downloads of nothing but 0 bytes there is one; a download of a kind not
// declared is a panic naming the figure and the condition.
func TestReceivedBytesNothing(t *testing.T) {
	r := ReceivedFixture()
	r.Rows = []DownloadRow{{Label: "row-b", Size: 1 << 20}}
	if d := r.Drawing(); d != nil {
		t.Errorf("no download: a drawing of %d panels", len(d.Panels()))
	}
	r.Rows = []DownloadRow{{Label: "row-z", Downloads: []Received{{0, 0}}}}
	if d := r.Drawing(); d == nil {
		t.Error("downloads of 0 bytes: no drawing")
	}
	r.Rows = []DownloadRow{{Label: "row-k", Size: 1, Downloads: []Received{{1, 3}}}}
	defer func() {
		msg, _ := recover().(string)
		if !strings.Contains(msg, "pets-bytes") || !strings.Contains(msg, `"row-k" is of kind 3`) {
			t.Errorf("undeclared kind: panic %q, want one naming the figure, the condition and the kind", msg)
		}
	}()
	r.Drawing()
}
