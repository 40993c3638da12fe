package dashboards

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"github.com/grafana/grafana-foundation-sdk/go/units"
)

// DatasourceVariable names the dashboards' data source variable; every
// panel and query reads from it, so one JSON file works against any
// Prometheus without __inputs placeholders.
const DatasourceVariable = "datasource"

// Units the SDK has no constant for. Grafana's "suffix:" custom unit
// prints the text after the value.
const unitCores = "suffix: cores"

// datasource is the dashboard's data source variable as a panel or query
// data source.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr("prometheus"), Uid: cog.ToPtr("${" + DatasourceVariable + "}")}
}

func datasourceVariable() *dashboard.DatasourceVariableBuilder {
	return dashboard.NewDatasourceVariableBuilder(DatasourceVariable).
		Label("Data source").
		Description("The Prometheus that scrapes slowlab exporter (and loadgen).").
		Type("prometheus")
}

// labelVariable is a multi-value variable over the values of label on
// metric; "All" is the regex .* so `label=~"$name"` matches everything.
func labelVariable(name, label, metric, description string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, %s)", metric, label)
	all := "All"
	allValue := "$__all"
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Description(description).
		Datasource(datasource()).
		Query(dashboard.StringOrMap{String: &q}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).
		IncludeAll(true).
		AllValue(".*").
		Current(dashboard.VariableOption{
			Selected: cog.ToPtr(true),
			Text:     dashboard.StringOrArrayOfString{String: &all},
			Value:    dashboard.StringOrArrayOfString{String: &allValue},
		})
}

// query is one PromQL range query on the dashboard's data source.
func query(expr, legend string) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().
		Datasource(datasource()).
		Expr(expr).
		LegendFormat(legend).
		Range()
}

// quantile is histogram_quantile(q) of histogram metric over
// $__rate_interval, grouped by the comma-separated labels by. It reads the
// classic buckets and falls back to the native histogram for a Prometheus
// that scrapes native histograms only (the loadgen exposes both).
func quantile(q float64, metric, selector, by string) string {
	return fmt.Sprintf(
		"histogram_quantile(%g, sum by (le, %s) (rate(%s_bucket{%s}[$__rate_interval])))"+
			" or histogram_quantile(%g, sum by (%s) (rate(%s{%s}[$__rate_interval])))",
		q, by, metric, selector, q, by, metric, selector)
}

// sel joins label matchers into the inside of a selector's braces.
func sel(matchers ...string) string { return strings.Join(matchers, ", ") }

func refID(i int) string { return string(rune('A' + i)) }

// timeSeries is a line panel of half the dashboard's width. Every panel
// says what it shows (description) and in which unit.
func timeSeries(title, unit, description string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().
		Title(title).
		Description(description).
		Unit(unit).
		Datasource(datasource()).
		Height(8).
		Span(12).
		Min(0).
		LineWidth(1).
		FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		Legend(common.NewVizLegendOptionsBuilder().
			DisplayMode(common.LegendDisplayModeTable).
			Placement(common.LegendPlacementBottom).
			ShowLegend(true).
			Calcs([]string{"lastNotNull", "max"})).
		Tooltip(common.NewVizTooltipOptionsBuilder().
			Mode(common.TooltipDisplayModeMulti).
			Sort(common.SortOrderDescending))
	for i, t := range targets {
		p.WithTarget(t.RefId(refID(i)))
	}
	return p
}

// ratioSeries is a timeSeries of a 0..1 ratio.
func ratioSeries(title, description string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeSeries(title, units.PercentUnit, description, targets...).Max(1)
}

// stackedSeries is a timeSeries whose series add up (counts by state).
func stackedSeries(title, unit, description string, targets ...*prometheus.DataqueryBuilder) *timeseries.PanelBuilder {
	return timeSeries(title, unit, description, targets...).
		FillOpacity(40).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
}

// bucketHeatmap shows a classic histogram's buckets as Prometheus
// computed them (no re-bucketing in Grafana).
func bucketHeatmap(title, unit, description, expr string) *heatmap.PanelBuilder {
	return heatmap.NewPanelBuilder().
		Title(title).
		Description(description).
		Unit(unit).
		Datasource(datasource()).
		Height(8).
		Span(12).
		Calculate(false).
		RowsFrame(heatmap.NewRowsHeatmapOptionsBuilder().Layout(common.HeatmapCellLayoutLe)).
		YAxis(heatmap.NewYAxisConfigBuilder().Unit(unit)).
		Color(heatmap.NewHeatmapColorOptionsBuilder().
			Mode(heatmap.HeatmapColorModeScheme).
			Scheme("Oranges").
			Scale(heatmap.HeatmapColorScaleExponential).
			Exponent(0.5).
			Steps(64)).
		CellValues(heatmap.NewCellValuesBuilder().Unit(units.RequestsPerSecond)).
		Tooltip(heatmap.NewHeatmapTooltipBuilder().
			Mode(common.TooltipDisplayModeSingle).
			YHistogram(true).
			ShowColorScale(true)).
		ShowLegend().
		WithTarget(query(expr, "{{le}}").
			Format(prometheus.PromQueryFormatHeatmap).
			RefId(refID(0)))
}

// finish numbers the panels (rows included) in order, so links to a
// panel (viewPanel=N) stay valid across regenerations.
func finish(b *dashboard.DashboardBuilder) (dashboard.Dashboard, error) {
	d, err := b.Build()
	if err != nil {
		return d, err
	}
	var id uint32
	for _, p := range d.Panels {
		id++
		switch {
		case p.Panel != nil:
			p.Panel.Id = cog.ToPtr(id)
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
	return d, nil
}

// newDashboard has the settings both dashboards share.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"slowlab"}).
		Editable().
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Refresh("10s").
		Time("now-30m", "now").
		Timezone(common.TimeZoneBrowser)
}
