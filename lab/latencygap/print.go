package latencygap

import (
	"cmp"
	"fmt"
	"io"
	"strconv"

	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Print implements lab.Result: the conditions table, and a warning when
// a path was not faithful.
func (r *Result) Print(w io.Writer) {
	conditionsTable.WriteText(w, r.Rows)
	if len(r.Pages) > 0 {
		fmt.Fprintln(w)
		pagesTable.WriteText(w, r.Pages)
	}
	if !r.Valid() {
		fmt.Fprintf(w, "\nwarning: in some condition the path was not faithful (measured RTT more than %g ms off the configured one, the delay line's p99 lateness above %s, or the loss measured at the path's ends off the asked one beyond the binomial's bound): those rows are marked invalid\n",
			MaxRTTError, netem.MaxP99Lateness)
	}
}

// conditionsTable is the conditions table (gap.csv and gap-path.csv),
// printed by the CLI and drawn in the report; its caption says what each
// column is.
var conditionsTable = report.Table[Row]{
	Caption: "latency-gap conditions (" + gapFile + " and " + pathFile + "): each time is the median over the runs; " +
		"configured_rtt_ms is what the path was asked to add (up+down when asymmetric), rtt_ms what the kernel measured on the " +
		"connections (TCP_INFO); blind_% = 1 − server_ms / new_ms, last_byte_* the same by the server's timing through the last " +
		"body byte; late_*: the TUN delay line's lateness; lost_%: the loss the path applied by its own count, measured_lost_% the " +
		"loss its ends measured, overflow its queue's drops; valid: the path was what the row claims; dns: how the client " +
		"found the server (cold: a lookup per new connection, cached: kept for its TTL, +the resolver's delay, /what it answered " +
		"for AAAA when not empty: a+aaaa the server's IPv6 address, aaaa-blackhole one that never answers, aaaa-late the IPv6 " +
		"address that much later than A), dns_ms the " +
		"median lookup of the new connections (0: the cache answered), connect_ms their median TCP connect (a happy-eyeballs " +
		"fallback's wait included) and ipv6_% the share of them over IPv6.",
	Cols: []report.Column[Row]{
		report.Col("size_bytes", func(r *Row) report.Cell { return sizeCell(r.Gap.SizeBytes) }),
		report.Col("configured_rtt_ms", func(r *Row) report.Cell { return r.Gap.rttCell(r.Gap.ConfiguredRTTMS) }),
		report.Col("rtt_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.RTTMS, report.Decimals(3)) }),
		report.Col("method", func(r *Row) report.Cell { return report.Text(r.Gap.DelayMethod) }),
		report.Col("tls", func(r *Row) report.Cell { return report.Text(cmp.Or(r.Gap.TLS, TLSNone)) }), // "": a row of before
		report.Col("loss_%", func(r *Row) report.Cell { return r.Gap.lossCell() }),
		report.Col("rate", func(r *Row) report.Cell { return r.Gap.rateCell() }),
		report.Col("work_ms", func(r *Row) report.Cell {
			g := r.Gap
			switch {
			case g.WorkMS <= 0:
				return number("-")
			case g.WorkKind == WorkCPU:
				return number(fmt.Sprintf("%g cpu", g.WorkMS))
			}
			return number(fmt.Sprintf("%g", g.WorkMS))
		}),
		report.Col("server_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.ServerMS, report.Decimals(3)) }),
		report.Col("keepalive_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.ClientKeepaliveMS, report.Decimals(2)) }),
		report.Col("new_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.ClientNewMS, report.Decimals(2)) }),
		report.Col("handshake_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.HandshakeMS, report.Decimals(2)) }),
		report.Col("blind_%", func(r *Row) report.Cell { return report.Opt(r.Gap.ServerBlindPct, report.Decimals(1)) }),
		report.Col("last_byte_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.ServerLastByteMS, report.Decimals(3)) }),
		report.Col("last_byte_blind_%", func(r *Row) report.Cell { return report.Opt(r.Gap.ServerLastByteBlindPct, report.Decimals(1)) }),
		report.Col("runs", func(r *Row) report.Cell { return report.Int(r.Gap.Runs) }),
		report.Col("late_p50_ms", func(r *Row) report.Cell { return report.Opt(r.Path.LatenessP50MS, report.Decimals(3)) }),
		report.Col("late_p99_ms", func(r *Row) report.Cell { return report.Opt(r.Path.LatenessP99MS, report.Decimals(3)) }),
		report.Col("late_max_ms", func(r *Row) report.Cell { return report.Opt(r.Path.LatenessMaxMS, report.Decimals(3)) }),
		report.Col("lost_%", func(r *Row) report.Cell { return report.Opt(r.Path.LossAppliedPct, report.Decimals(2)) }),
		report.Col("measured_lost_%", func(r *Row) report.Cell { return report.Opt(r.Path.LossMeasuredPct, report.Decimals(2)) }),
		report.Col("overflow", func(r *Row) report.Cell { return report.Opt(r.Path.OverflowDrops, report.Decimals(0)) }),
		report.Col("valid", func(r *Row) report.Cell {
			switch {
			case r.Path == (Path{}): // no gap-path.csv row
				return report.Opt(recorder.None(), report.Decimals(0))
			}
			return validCell(r.Path.Valid)
		}),
		report.Col("dns", func(r *Row) report.Cell { return number(r.Gap.dnsText()) }),
		report.Col("dns_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.DNSMS, report.Decimals(2)) }),
		report.Col("connect_ms", func(r *Row) report.Cell { return report.Opt(r.Gap.ConnectMS, report.Decimals(2)) }),
		report.Col("ipv6_%", func(r *Row) report.Cell { return report.Opt(r.Gap.IPv6Pct, report.Decimals(0)) }),
	},
}

// validCell is a valid column's cell: yes, or NO to stand out.
func validCell(valid bool) report.Cell {
	if valid {
		return report.Text("yes")
	}
	return report.Text("NO")
}

// number is a cell that is a quantity written as text (right-aligned).
func number(s string) report.Cell { return report.Cell{Text: s, Num: true} }

// sizeCell is a response size in bytes, named on hover.
func sizeCell(n int) report.Cell {
	return report.Cell{Text: strconv.Itoa(n), Title: report.ByteSize(n), Num: true}
}

// The cells of a condition's settings that both tables show: its
// configured RTT (up+down when asymmetric), loss, rate and DNS mode.

func (s Settings) rttCell(configured float64) report.Cell {
	if s.DelayUpMS != s.DelayDownMS {
		return number(fmt.Sprintf("%g+%g", s.DelayUpMS, s.DelayDownMS))
	}
	return number(fmt.Sprintf("%g", configured))
}

func (s Settings) lossCell() report.Cell { return number(fmt.Sprintf("%g", s.LossPct)) }

func (s Settings) rateCell() report.Cell {
	if s.RateBits > 0 {
		return number(BitRate(s.RateBits).String())
	}
	return number("-")
}

func (s Settings) dnsText() string {
	if !dnsOn(s) {
		return "-"
	}
	return dnsName(s, "+", "/")
}

// Section is the latency-gap section of the report, which the
// registration carries: the conditions' figures and table, then the load
// conditions' (addPages).
var Section = report.NewSection(Name, gapFile, func(dir string) (*report.Part, error) {
	rows, paths, err := readConditions(dir, true)
	if err != nil {
		return nil, err
	}
	p := report.NewPart(Name, "What the server measures of a request against what the client waits, on a kept-alive and a "+
		"new connection (docs/experiments.md section 3). Server blind = 1 − server / client new-connection time, where server is "+
		"what the server reports in its Server-Timing header; to last byte, what it measured through the last body byte written.")
	if !p.AddBars(timesFigure(rows)) {
		p.Skip("Latency-gap figure left out: %s has no timings.", gapFile)
	}
	reqs, present, err := recorder.ReadOptional[Request](dir)
	if err != nil {
		return nil, err
	}
	if !p.AddBars(phasesFigure(rows, reqs)) && !present {
		p.Skip("New-connection phases left out: no %s.", requestFile)
	}
	if d := blindByWorkFigure(rows); d != nil {
		p.AddDrawing(d)
	}
	if !paths {
		p.Skip("No %s: the path's columns (late_*, lost_%%, measured_lost_%%, overflow, valid) are not measured.", pathFile)
	}
	report.AddTable(p, &conditionsTable, rows)
	return p, addPages(p, dir)
})

// addPages adds the load conditions' waterfall and table to the report
// part, when dir has gap-pages.csv.
func addPages(p *report.Part, dir string) error {
	pages, present, err := recorder.ReadOptional[Page](dir)
	if err != nil || !present {
		return err
	}
	fetches, _, err := recorder.ReadOptional[Fetch](dir)
	if err != nil {
		return err
	}
	if d := waterfallFigure(pages, fetches); d != nil {
		p.AddDrawing(d)
	} else if len(pages) > 0 {
		p.Skip("Page-load waterfall left out: no ok load in %s.", fetchFile)
	}
	if len(pages) > 0 {
		report.AddTable(p, &pagesTable, pages)
	}
	return nil
}
