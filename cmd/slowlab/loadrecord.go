package main

import (
	"time"

	"github.com/slowlab/slowlab/lab/loadgendir"
)

// record is r's loadgen.json (lab/loadgendir: its format).
func (r *loadgenRun) record() loadgendir.Record {
	f := r.f
	rec := loadgendir.Record{RunID: f.runID, Target: r.u.String(), Rate: f.rate, Duration: f.duration.String(), StartOffset: f.offset.String(),
		Timeout: f.timeout.String(), MaxLag: f.maxLag.String(), KeepAlive: f.keepAlive, HTTP2: f.http2, Slow: f.slow,
		ReadRate: f.readRate, RcvBuf: f.rcvBuf, ReadSize: f.readSize, Shard: r.shard, Shards: r.count}
	if f.slow > 0 && r.sr.URL != nil {
		rec.SlowTarget = r.sr.URL.String()
	}
	if !r.startAt.IsZero() {
		rec.StartAt = r.startAt.UTC().Format(time.RFC3339Nano)
	}
	if whole, err := f.schedule(); err == nil {
		rec.Planned = whole.Hits()
	}
	return rec
}
