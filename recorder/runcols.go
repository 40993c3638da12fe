package recorder

// The columns run rows share, declared once: structs whose csv tags
// declare them, which a run row embeds where the columns go (the column
// names, order and precision are the same in every file that has them).

// FastOver is /fast over a condition's ok runs, as every conditions
// table shows it: the requests planned and ok summed, p50 and p95 the
// medians of the runs' values, and the range of their p95.
type FastOver struct {
	FastPlanned, FastOK              int
	P50MS, P95MS, P95MinMS, P95MaxMS Maybe
}

// SummarizeFast is FastOver of runs (the caller passes the ok ones), rows
// that embed FastFields.
func SummarizeFast[T any, P interface {
	*T
	fast() *FastFields
}](runs []T) FastOver {
	var f FastOver
	var p50, p95 []float64
	for i := range runs {
		r := P(&runs[i]).fast()
		f.FastPlanned += r.FastPlanned
		f.FastOK += r.FastOK
		p50, p95 = AppendValid(p50, r.P50MS), AppendValid(p95, r.P95MS)
	}
	f.P50MS, f.P95MS = Some(Median(p50)), Some(Median(p95))
	f.P95MinMS, f.P95MaxMS = Some(minimum(p95)), Some(NearestRank(p95, 100))
	return f
}

// FastFields are a run row's /fast columns, embedded in the run rows of
// the experiments that run /fast beside their clients.
type FastFields struct {
	FastPlanned int   `csv:"fast_planned"`
	FastSent    int   `csv:"fast_sent"`
	FastTotal   int   `csv:"fast_total"`
	FastOK      int   `csv:"fast_ok"`
	P50MS       Maybe `csv:"p50_ms,millis"`
	P95MS       Maybe `csv:"p95_ms,millis"`
	MaxMS       Maybe `csv:"max_ms,millis"`
}

// fast is how SummarizeFast finds the columns in a row that embeds f.
func (f *FastFields) fast() *FastFields { return f }

// SummarizeFast fills f from the run's /fast requests as SummarizeRun
// does, keeping FastPlanned.
func (f *FastFields) SummarizeFast(reqs []Request) {
	r := SummarizeRun(RunMeta{FastPlanned: f.FastPlanned}, reqs, nil)
	f.FastSent, f.FastTotal, f.FastOK = r.FastSent, r.FastTotal, r.FastOK
	f.P50MS, f.P95MS, f.MaxMS = r.P50MS, r.P95MS, r.MaxMS
}

// Holding are the run columns of an experiment whose clients each hold a
// slot of the app (a stream, a socket): the app's slots and workers, the
// most it held at once and the most workers holding one, from its own
// count sampled during the run.
type Holding struct {
	Slots             Maybe `csv:"slots,whole"`
	Workers           Maybe `csv:"workers,whole"`
	HeldMax           Maybe `csv:"held_max,whole"`
	WorkersHoldingMax Maybe `csv:"workers_holding_max,whole"`
}
