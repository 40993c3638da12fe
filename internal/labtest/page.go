package labtest

import (
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/slowlab/slowlab/report"
)

// SectionRows is the text of every table row of report.html's section id
// (an experiment's name, or "environment"), cells joined by " | ".
func SectionRows(t *testing.T, rep *report.Report, id string) []string {
	t.Helper()
	data, err := os.ReadFile(rep.HTML)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := html.Parse(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for n := range doc.Descendants() {
		if n.Type != html.ElementNode || n.Data != "section" ||
			!slices.ContainsFunc(n.Attr, func(a html.Attribute) bool { return a.Key == "id" && a.Val == id }) {
			continue
		}
		for tr := range n.Descendants() {
			if tr.Type != html.ElementNode || tr.Data != "tr" {
				continue
			}
			var cells []string
			for td := range tr.ChildNodes() {
				if td.Type == html.ElementNode && td.Data == "td" {
					var b strings.Builder
					for x := range td.Descendants() {
						if x.Type == html.TextNode {
							b.WriteString(x.Data)
						}
					}
					cells = append(cells, b.String())
				}
			}
			if len(cells) > 0 {
				rows = append(rows, strings.Join(cells, " | "))
			}
		}
	}
	return rows
}

// FigureNames are rep's figures' names, in order.
func FigureNames(rep *report.Report) []string {
	var names []string
	for _, f := range rep.Figures {
		names = append(names, f.Name)
	}
	return names
}
