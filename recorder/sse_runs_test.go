package recorder

import "testing"

func TestSummarizeSSERun(t *testing.T) {
	streams := []SSEStream{
		{EventsExpected: 3, Outcome: SSEComplete, FirstByteMS: Some(2)},
		{EventsExpected: 3, Outcome: SSETruncated, FirstByteMS: Some(4)},
	}
	var events []SSEEvent
	for i, d := range []float64{1, 2, 3, 4, 100} {
		events = append(events, SSEEvent{Seq: i, DelayMS: d})
	}
	run := SummarizeSSERun(SSERun{Status: RunOK}, nil, streams, events)
	if run.EventsExpected != 6 || run.Events != 5 || run.StreamsComplete != 1 {
		t.Errorf("counts %+v", run)
	}
	if run.DelayP50MS != Some(3) || run.DelayP95MS != Some(100) || run.DelayMaxMS != Some(100) || run.FirstByteMS != Some(3) {
		t.Errorf("delays p50 %v p95 %v max %v first byte %v", run.DelayP50MS, run.DelayP95MS, run.DelayMaxMS, run.FirstByteMS)
	}
	conds := SummarizeSSEConditions([]SSERun{run, {Status: RunFailed}, {Route: "direct", Status: RunOK}})
	if len(conds) != 2 || conds[0].Runs != 1 || conds[0].Excluded != 1 || conds[0].Events != 5 || conds[1].DelayP50MS.Valid {
		t.Errorf("conditions %+v", conds)
	}
}
