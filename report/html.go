package report

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot/vg"
)

// page is the data of report.html.
type page struct {
	Dir      string
	Env      *table // nil without environment.json
	EnvNote  string // why Env is nil, where a note is due
	Sections []*section
}

// htmlFigure is a written figure as report.html shows it: numbered, its
// image at the size it is drawn (CSS pixels, 96 per inch).
type htmlFigure struct {
	Figure
	Number        int
	PNG, SVG      string
	Width, Height int
}

func newHTMLFigure(number int, fig Figure, f *figure) *htmlFigure {
	// The PNG's pixels at dpi, as 96 per inch.
	px := func(l vg.Length) int { return int(math.Ceil(l.Points()/72*dpi)) * 96 / dpi }
	return &htmlFigure{Figure: fig, Number: number, PNG: fig.Files[0], SVG: fig.Files[1], // as write writes them
		Width: px(f.width), Height: px(f.height)}
}

// Title returns the page title.
func (p *page) Title() string {
	var names []string
	for _, s := range p.Sections {
		names = append(names, s.Title)
	}
	return "slowlab report: " + strings.Join(names, ", ") + " (" + filepath.Base(filepath.Clean(p.Dir)) + ")"
}

// writeHTML renders the page to path through a temporary file, so a
// reader never sees half a report.
func writeHTML(path string, p *page) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// pageTemplate is report.html. It has no scripts and loads nothing but
// the figures beside it: system fonts, inline CSS.
var pageTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif;
       max-width: 62rem; margin: 1.5rem auto; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.25rem; margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
code { font-size: 0.9em; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9rem; color: #444; }
table { border-collapse: collapse; margin: 1rem 0; font-size: 0.88rem; }
caption { text-align: left; font-size: 0.9rem; color: #444; padding-bottom: 0.3rem; }
th, td { border: 1px solid #ddd; padding: 0.2rem 0.5rem; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.wrap { word-break: break-all; }
p.note { color: #7a4a00; background: #fff7e6; padding: 0.3rem 0.6rem; font-size: 0.9rem; }
nav ul { padding-left: 1.2rem; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p>Results directory <code>{{.Dir}}</code>. Figures are in <code>figures/</code> beside this file, as PNG and SVG.</p>
<nav><ul>
{{- if .Env}}
<li><a href="#environment">Environment</a></li>
{{- end}}
{{- range .Sections}}
<li><a href="#{{.ID}}">{{.Title}}</a></li>
{{- end}}
</ul></nav>
{{- with .Env}}
<section id="environment">
<h2>Environment</h2>
{{template "table" .}}
</section>
{{- else}}{{with .EnvNote}}
<p class="note">{{.}}.</p>
{{- end}}{{end}}
{{- range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
<p>{{.Intro}}</p>
{{- range .Blocks}}
{{- with .Figure}}
<figure id="figure-{{.Name}}">
<img src="{{.PNG}}" alt="{{.Title}}" width="{{.Width}}" height="{{.Height}}">
<figcaption><b>Figure {{.Number}}. {{.Title}}.</b> {{.Caption}} <a href="{{.SVG}}">SVG</a> · <a href="{{.PNG}}">PNG</a></figcaption>
</figure>
{{- end}}
{{- with .Table}}{{template "table" .}}{{end}}
{{- with .Note}}
<p class="note">{{.}}</p>
{{- end}}
{{- end}}
</section>
{{- end}}
</body>
</html>
{{define "table"}}
{{- if .Details}}
<details><summary>{{.Details}}</summary>
{{- end}}
<table{{if .TextHead}} data-text-head="{{.TextHead}}"{{end}}>
<caption>{{.Caption}}</caption>
{{- if .Head}}
<thead><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr></thead>
{{- end}}
<tbody>
{{- range .Rows}}
<tr>{{range .}}<td{{if .Num}} class="num"{{end}}{{if .Title}} title="{{.Title}}"{{end}}>{{.Text}}</td>{{end}}</tr>
{{- end}}
</tbody>
</table>
{{- if .Details}}
</details>
{{- end}}
{{- end}}
`))
