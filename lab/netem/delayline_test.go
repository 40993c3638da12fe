package netem

import (
	"encoding/binary"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// chanDevice is a fake Device: Read returns the packets sent on in (io.EOF
// once in is closed); Write records each packet with its time.
type chanDevice struct {
	in chan []byte

	mu  sync.Mutex
	out []written
}

type written struct {
	at  time.Time
	seq uint32
	n   int
}

func newChanDevice() *chanDevice { return &chanDevice{in: make(chan []byte, 10000)} }

func (d *chanDevice) Read(p []byte) (int, error) {
	b, ok := <-d.in
	if !ok {
		return 0, io.EOF
	}
	return copy(p, b), nil
}

func (d *chanDevice) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.out = append(d.out, written{at: time.Now(), seq: binary.BigEndian.Uint32(p), n: len(p)})
	return len(p), nil
}

func (d *chanDevice) written() []written {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]written(nil), d.out...)
}

// waitWritten waits until dst has n packets: closing the line's source
// drops what is still queued, so a test closes it only once everything it
// expects has left (a loaded machine may run the writer late).
func waitWritten(t *testing.T, dst *chanDevice, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for len(dst.written()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d packets written after 30 s", len(dst.written()), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func pkt(seq uint32, size int) []byte {
	b := make([]byte, size)
	binary.BigEndian.PutUint32(b, seq)
	return b
}

// TestDelayLineOrderAndDelay sends bursts with irregular gaps through a
// 20 ms line: every packet leaves in order, no earlier than 20 ms after it
// was handed over, and the line's own lateness figures are small.
func TestDelayLineOrderAndDelay(t *testing.T) {
	slowlabtest.Timing(t)
	src, dst := newChanDevice(), newChanDevice()
	const delay = 20 * time.Millisecond
	l := StartLine(src, dst, LineConfig{Delay: delay})
	var sent []time.Time
	seq := uint32(0)
	for burst := range 20 {
		for range 1 + burst%7 {
			sent = append(sent, time.Now())
			src.in <- pkt(seq, 100+int(seq)%1400)
			seq++
		}
		time.Sleep(time.Duration(burst%3) * time.Millisecond)
	}
	waitWritten(t, dst, len(sent))
	close(src.in)
	if err := l.Wait(); err != nil {
		t.Fatal(err)
	}
	out := dst.written()
	if len(out) != len(sent) {
		t.Fatalf("%d packets written, %d sent", len(out), len(sent))
	}
	for i, w := range out {
		if w.seq != uint32(i) {
			t.Fatalf("packet %d written as number %d: order not kept", w.seq, i)
		}
		if d := w.at.Sub(sent[i]); d < delay {
			t.Errorf("packet %d delayed %s, want at least %s", i, d, delay)
		}
	}
	lt := l.TakeLateness()
	t.Logf("lateness over %d packets: p50 %s, p99 %s, max %s", lt.Packets, lt.P50, lt.P99, lt.Max)
	if lt.Packets != len(sent) || lt.Dropped != 0 {
		t.Errorf("lateness counts %d packets, %d dropped; want %d, 0", lt.Packets, lt.Dropped, len(sent))
	}
	if again := l.TakeLateness(); again.Packets != 0 {
		t.Errorf("TakeLateness did not reset: %+v", again)
	}
}

// TestDelayLineRate paces 1000-byte packets at 1 MB/s: they leave about
// 1 ms apart, in order, each at least delay + its serialization after the
// burst started.
func TestDelayLineRate(t *testing.T) {
	slowlabtest.Timing(t)
	src, dst := newChanDevice(), newChanDevice()
	const delay, rate, n = 5 * time.Millisecond, 1_000_000, 30
	l := StartLine(src, dst, LineConfig{Delay: delay, Rate: rate})
	start := time.Now()
	for i := range n {
		src.in <- pkt(uint32(i), 1000)
	}
	waitWritten(t, dst, n)
	close(src.in)
	l.Wait()
	out := dst.written()
	if len(out) != n {
		t.Fatalf("%d packets written, want %d", len(out), n)
	}
	for i, w := range out {
		if w.seq != uint32(i) {
			t.Fatalf("order not kept at %d", i)
		}
		if min := delay + time.Duration(i+1)*time.Millisecond; w.at.Sub(start) < min {
			t.Errorf("packet %d left after %s, want at least %s", i, w.at.Sub(start), min)
		}
	}
	if span := out[n-1].at.Sub(out[0].at); span < (n-2)*time.Millisecond {
		t.Errorf("%d packets left within %s: not paced at 1 MB/s", n, span)
	}
}

// TestDelayLineQueueLimit drops what does not fit in the queue and counts it.
func TestDelayLineQueueLimit(t *testing.T) {
	slowlabtest.Timing(t)
	src, dst := newChanDevice(), newChanDevice()
	l := StartLine(src, dst, LineConfig{Delay: 50 * time.Millisecond, QueueLimit: 10})
	for i := range 30 {
		src.in <- pkt(uint32(i), 60)
	}
	waitWritten(t, dst, 10) // the queue's worth; the rest was dropped on arrival
	close(src.in)
	l.Wait()
	lt := l.TakeLateness()
	if got := len(dst.written()); got+lt.Dropped != 30 || got < 10 || lt.Dropped == 0 {
		t.Errorf("%d written, %d dropped of 30 with a queue of 10", got, lt.Dropped)
	}
	// Its own count has them as overflows, none as random loss.
	if c := l.Counts(); c.Packets != 30 || c.Lost != 0 || c.Overflow != int64(lt.Dropped) {
		t.Errorf("counts %+v, want 30 packets, none lost at random, %d overflows", c, lt.Dropped)
	}
}

func TestSchedule(t *testing.T) {
	l := &DelayLine{c: LineConfig{Delay: 10 * time.Millisecond, Rate: 1000}}
	t0 := time.Unix(100, 0)
	ms := time.Millisecond
	for i, tc := range []struct {
		at   time.Duration
		size int
		want time.Duration
	}{
		{0, 10, 20 * ms},          // 10 bytes at 1000 B/s = 10 ms, + 10 ms
		{1 * ms, 10, 30 * ms},     // waits for the first to be paced out
		{100 * ms, 1, 111 * ms},   // line idle again
		{100 * ms, 0, 111 * ms},   // never before the previous
		{200 * ms, 100, 310 * ms}, // 100 ms of serialization
	} {
		if got := l.schedule(t0.Add(tc.at), tc.size).Sub(t0); got != tc.want {
			t.Errorf("case %d: due at %s, want %s", i, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var late []time.Duration
	for i := 1; i <= 200; i++ {
		late = append(late, time.Duration(201-i)*time.Microsecond)
	}
	s := summarize(late, 3)
	if s.Packets != 200 || s.Dropped != 3 || s.P50 != 100*time.Microsecond || s.P99 != 198*time.Microsecond || s.Max != 200*time.Microsecond {
		t.Errorf("summarize = %+v", s)
	}
	if !s.Valid() || (Lateness{Packets: 1, P99: 2 * time.Millisecond}).Valid() || !(Lateness{}).Valid() {
		t.Error("Valid: want p99 <= 1 ms or no packets")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		c    Config
		want string
	}{
		{Config{Method: "tc"}, `method "tc": allowed auto, netem, tun, none`},
		{Config{Delay: -time.Millisecond}, "delay -1ms: allowed 0 to 10s"},
		{Config{Delay: time.Minute}, "delay 1m0s: allowed 0 to 10s"},
		{Config{Rate: -1}, "rate -1: must be 0 (no limit) or more bytes per second"},
		{Config{Rate: 7999}, "rate 7999 bytes/s: at least 8000 bytes/s (64 kbit/s), or 0 for no limit"},
		{Config{Method: MethodNone, Delay: time.Millisecond}, "method none with delay 1ms (up 0s, down 0s), loss 0% and rate 0: none adds nothing; use auto, netem or tun"},
		{Config{Method: MethodNone, Loss: 1}, "method none with delay 0s (up 0s, down 0s), loss 1% and rate 0: none adds nothing; use auto, netem or tun"},
		{Config{Loss: 50.5}, "loss 50.5%: allowed 0 to 50%"},
		{Config{Loss: -0.1}, "loss -0.1%: allowed 0 to 50%"},
		{Config{DelayUp: -time.Millisecond}, "delay up -1ms: allowed 0 to 10s"},
		{Config{DelayDown: 11 * time.Second}, "delay down 11s: allowed 0 to 10s"},
		{Config{Delay: time.Millisecond, DelayDown: 2 * time.Millisecond}, "delay 1ms with delay up 0s and down 2ms: give either one delay for both directions or one per direction"},
		{Config{QueueLimit: -1}, "queue limit -1: allowed 0 (default 1000) to 1000000"},
		{Config{CongestionControl: "cubic;reno"}, `congestion control "cubic;reno": want a kernel algorithm name such as cubic or bbr`},
	} {
		err := tc.c.Validate()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v: got %v, want %s", tc.c, err, tc.want)
		}
	}
	if err := (Config{Delay: 25 * time.Millisecond, CongestionControl: "cubic"}).Validate(); err != nil {
		t.Error(err)
	}
}
