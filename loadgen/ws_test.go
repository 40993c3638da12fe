package loadgen

import (
	"context"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/appserver"
	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func wsURL(t *testing.T, base string, p appserver.WSParams) *url.URL {
	t.Helper()
	u, err := url.Parse(strings.Replace(base, "http://", "ws://", 1) + "/ws?" + p.Query())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func asyncApp(t *testing.T) (string, *appserver.Server) {
	t.Helper()
	o := appserver.DefaultOptions()
	o.Model = appserver.ModelAsync
	return serveApp(t, o)
}

// A consumer reads every pushed message in order, each with the app's
// stamp, and the app's close says how many it pushed.
func TestWSConsumerReadsPushes(t *testing.T) {
	slowlabtest.Timing(t)
	base, _ := asyncApp(t)
	var got []WSDelivery
	before := time.Now()
	r := WSConsumer{WSDial: WSDial{URL: wsURL(t, base, appserver.WSParams{Mode: appserver.WSPush, Interval: 5 * time.Millisecond, Count: 20, Pad: 100, Queue: appserver.WSQueueWait}), Timeout: time.Minute},
		OnMessage: func(d WSDelivery) { got = append(got, d) }}.Run(context.Background())
	if r.Err != nil || r.End != "closed" || r.CloseCode != 1000 || r.Messages != 20 || r.Expected != 20 {
		t.Fatalf("%+v: want 20 messages and the app's normal close saying 20", r)
	}
	for i, d := range got {
		if d.Seq != i || d.Bytes < 100 || time.UnixMicro(d.SentUS).Before(before.Truncate(time.Microsecond)) || d.Delay() < -time.Millisecond {
			t.Errorf("message %d: %+v (delay %v), want seq %d stamped after the session began and read after", i, d, d.Delay(), i)
		}
	}
}

// A slow consumer holds an app that waits for its socket: the app cannot
// stamp message j before the consumer took all but what the path holds
// of the j messages before it, so message j's stamp is at least
// (j*size - capacity)/rate after the session began, capacity being the
// app's send buffer at its largest, the consumer's doubled SO_RCVBUF, the
// message being read and 64 KiB for the libraries' buffers.
func TestWSSlowConsumerHoldsWaitingApp(t *testing.T) {
	slowlabtest.Timing(t)
	slowlabtest.EndToEnd(t, "it paces a consumer for seconds")
	base, _ := asyncApp(t)
	const count, pad, rate, rcvbuf = 40, 256 << 10, 8 << 20, 64 << 10
	var last WSDelivery
	before := time.Now()
	r := WSConsumer{WSDial: WSDial{URL: wsURL(t, base, appserver.WSParams{Mode: appserver.WSPush, Interval: time.Millisecond, Count: count, Pad: pad, Queue: appserver.WSQueueWait}),
		RcvBuf: rcvbuf, Timeout: time.Minute}, Rate: rate, OnMessage: func(d WSDelivery) { last = d }}.Run(context.Background())
	if r.Err != nil || r.Messages != count || r.Expected != count {
		t.Fatalf("%+v: want %d messages", r, count)
	}
	size := int(r.Bytes / count)
	capacity := slowlabtest.WmemMax(t) + 2*rcvbuf + size + 64<<10
	min := time.Duration(float64((count-1)*size-capacity) / rate * float64(time.Second))
	if min <= 0 {
		t.Fatalf("the test pushes too little (%d B) to fill the path (%d B)", (count-1)*size, capacity)
	}
	if got := time.UnixMicro(last.SentUS).Sub(before); got < min {
		t.Errorf("the last message was stamped %v after the session began, want at least %v: the app did not wait for its socket", got, min)
	}
}

// An app that queues without limit stamps on schedule whatever the
// consumer reads: with a consumer at 256 KiB/s its queue (the
// slowlab_target_ws_queued_bytes gauge) grows past all the path can hold
// (the session then ends: the test waits for the gauge, not the
// consumer), and goes back to 0 once the session is gone.
func TestWSUnboundedQueueGrows(t *testing.T) {
	slowlabtest.Timing(t)
	base, app := asyncApp(t)
	const count, pad, rate, rcvbuf = 40, 256 << 10, 256 << 10, 64 << 10
	threshold := float64(count*pad - slowlabtest.WmemMax(t) - 2*rcvbuf - 2*pad - 64<<10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	peak := make(chan float64, 1)
	go func() { // poll the gauge until it passes the threshold, then end the session
		var most float64
		defer func() { peak <- most; cancel() }()
		for ctx.Err() == nil && most < threshold {
			most = max(most, gaugeValue(t, app.Registry(), "slowlab_target_ws_queued_bytes"))
			time.Sleep(time.Millisecond)
		}
	}()
	r := WSConsumer{WSDial: WSDial{URL: wsURL(t, base, appserver.WSParams{Mode: appserver.WSPush, Interval: time.Millisecond, Count: count, Pad: pad, Queue: appserver.WSQueueUnbounded}),
		RcvBuf: rcvbuf, Timeout: time.Minute}, Rate: rate}.Run(ctx)
	cancel() // the session ended on its own: the poller stops too
	if p := <-peak; p < threshold {
		t.Errorf("the app's queue peaked at %.0f bytes seen (the session %+v), want at least %.0f: it did not queue ahead of the consumer", p, r, threshold)
	}
	waitGauge(t, app.Registry(), "slowlab_target_ws_queued_bytes", 0)
}

// gaugeValue reads an unlabelled gauge from reg.
func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		t.Error(err)
		return 0
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Errorf("no gauge %s", name)
	return 0
}

// waitGauge waits for the gauge to read want (the session's end is
// seen by the app after the client's).
func waitGauge(t *testing.T, reg prometheus.Gatherer, name string, want float64) {
	t.Helper()
	slowlabtest.WaitFor(t, name+" at "+strconv.FormatFloat(want, 'f', -1, 64), func() bool { return gaugeValue(t, reg, name) == want })
}

// A holder keeps an idle echo socket for its hold and closes it itself;
// with pings every 20 ms each is answered. A refused address ends the
// session at once, named.
func TestWSHolder(t *testing.T) {
	slowlabtest.Timing(t)
	base, _ := asyncApp(t)
	u := wsURL(t, base, appserver.WSParams{Mode: appserver.WSEcho})
	r := WSHolder{WSDial: WSDial{URL: u, Timeout: time.Minute}, Hold: 200 * time.Millisecond, Ping: 20 * time.Millisecond}.Run(context.Background())
	if r.End != "held" || r.Err != nil || r.Pings == 0 || r.Pongs != r.Pings || r.Duration < 200*time.Millisecond {
		t.Errorf("%+v: want a 200 ms hold ended by the holder, every ping answered", r)
	}
	refused, _ := url.Parse("ws://" + slowlabtest.RefusedAddr(t) + "/ws")
	if r := (WSHolder{WSDial: WSDial{URL: refused, Timeout: time.Minute}, Hold: time.Hour}).Run(context.Background()); r.End != "refused" {
		t.Errorf("%+v: want refused", r)
	}
}

// FuzzParseWSStamp: whatever a message holds, the stamp parser neither
// panics nor accepts what the app would not write; what it accepts reads
// back as the app's message for it.
func FuzzParseWSStamp(f *testing.F) {
	f.Add(appserver.WSMessage(3, 1712345678123456, "aaaa"))
	f.Add([]byte(`{"seq": 99999999999999999999, "t_us": 1}`))
	f.Add([]byte(`{"seq": -1, "t_us": 1}`))
	f.Add([]byte(`{"seq": 1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		seq, tUS, ok := ParseWSStamp(b)
		if !ok {
			return
		}
		if seq < 0 || tUS < 0 {
			t.Fatalf("%q: seq %d t_us %d", b, seq, tUS)
		}
		if want := appserver.WSMessage(seq, tUS, ""); !strings.HasPrefix(string(b), strings.TrimSuffix(string(want), `, "pad": ""}`)) {
			t.Fatalf("%q read as seq %d t_us %d, which the app writes as %q", b, seq, tUS, want)
		}
	})
}
