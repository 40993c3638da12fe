package netem

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPathTransit sends datagrams one way across a path and compares three
// counts of what crossed it: the receiving socket's (the truth), the
// path's ends' (Transit, settled) and the path's own (Counts). Transit
// must match the socket exactly on every kind of path; so must the path's
// own count, except where its dropper is made to drop packets it does
// not count (UncountedLoss), which Transit must still see.
func TestPathTransit(t *testing.T) {
	requireRoot(t)
	const n = 2000
	for _, tc := range []struct {
		name      string
		c         Config
		uncounted float64 // UncountedLoss
	}{
		{"none", Config{Method: MethodNone}, 0},
		{"tun", Config{Method: MethodTUN, Delay: time.Millisecond, Loss: 10}, 0},
		{"tun-miscounting", Config{Method: MethodTUN, Delay: time.Millisecond, Loss: 10}, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			UncountedLoss = tc.uncounted
			p := newPath(t, tc.c)
			UncountedLoss = 0
			srv, cli := udpPair(t, p)
			before, err := p.Settle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			own0, err := p.Counts()
			if err != nil {
				t.Fatal(err)
			}
			got := oneWay(t, n, func(b []byte) error { _, err := cli.Write(b); return err }, srv.Read, srv.SetReadDeadline, settleOf(t, p))
			after, err := p.Settle(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			own1, err := p.Counts()
			if err != nil {
				t.Fatal(err)
			}
			tr, own := after.Sub(before), own1.Sub(own0)
			t.Logf("%s: %d of %d arrived; ends counted %d sent, %d received; the path's own count %d packets, %d lost, %d overflowed",
				p.Method, len(got), n, tr.Sent, tr.Received, own.Packets, own.Lost, own.Overflow)
			if tr.Sent != n || tr.Received != int64(len(got)) || tr.Lost() != int64(n-len(got)) {
				t.Errorf("ends counted %d sent and %d received, want %d and the %d that arrived", tr.Sent, tr.Received, n, len(got))
			}
			if tc.c.Loss > 0 && len(got) == n {
				t.Errorf("all %d arrived through a %g%% loss", n, tc.c.Loss)
			}
			switch {
			case tc.uncounted == 0 && own.Lost+own.Overflow != tr.Lost():
				t.Errorf("the path counted %d lost, the ends %d", own.Lost+own.Overflow, tr.Lost())
			case tc.uncounted > 0 && own.Lost+own.Overflow >= tr.Lost():
				t.Errorf("a dropper that drops more than it counts counted %d lost, the ends %d: want fewer", own.Lost+own.Overflow, tr.Lost())
			}
		})
	}
}

// TestParseSNMP reads the Ip counters (snmp) and the IPv6 ones (snmp6)
// from the files in testdata and refuses the broken ones there, naming
// what is wrong.
func TestParseSNMP(t *testing.T) {
	for _, tc := range []struct {
		file     string
		parse    func(io.Reader) (Transit, error)
		want     Transit
		contains string
	}{
		{"snmp.txt", parseSNMP, Transit{Sent: 6520, Received: 8700}, ""},
		{"snmp-old.txt", parseSNMP, Transit{Sent: 17, Received: 23}, ""},
		{"snmp-invalid-no-ip.txt", parseSNMP, Transit{}, "no Ip counters"},
		{"snmp-invalid-short.txt", parseSNMP, Transit{}, "names but"},
		{"snmp-invalid-negative.txt", parseSNMP, Transit{}, "InReceives"},
		{"snmp-invalid-no-out.txt", parseSNMP, Transit{}, "no OutRequests"},
		{"snmp6.txt", parseSNMP6, Transit{Sent: 98, Received: 80}, ""},
		{"snmp6-invalid-negative.txt", parseSNMP6, Transit{}, "Ip6OutRequests \"-3\""},
		{"snmp6-invalid-no-out.txt", parseSNMP6, Transit{}, "no Ip6OutRequests"},
		{"snmp6-invalid-twice.txt", parseSNMP6, Transit{}, "Ip6InReceives given twice"},
		{"snmp.txt", parseSNMP6, Transit{}, "no Ip6OutRequests"},
	} {
		b, err := os.ReadFile(filepath.Join("testdata", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.parse(bytes.NewReader(b))
		if got != tc.want || (err == nil) != (tc.contains == "") || err != nil && !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: %+v, %v; want %+v and an error saying %q", tc.file, got, err, tc.want, tc.contains)
		}
	}
}

// FuzzParseSNMP: parseSNMP never panics, and returns counts only from
// an input with Ip counters, never negative.
func FuzzParseSNMP(f *testing.F) { fuzzCounters(f, "snmp*.txt", parseSNMP, "Ip:") }

// FuzzParseSNMP6: the same of parseSNMP6, from an input with
// Ip6OutRequests.
func FuzzParseSNMP6(f *testing.F) { fuzzCounters(f, "snmp6*.txt", parseSNMP6, "Ip6OutRequests") }

// fuzzCounters fuzzes parse, seeded from the testdata files matching
// pattern: it never panics, fails with no counts, and returns counts
// only from an input that has the text has, never negative.
func fuzzCounters(f *testing.F, pattern string, parse func(io.Reader) (Transit, error), has string) {
	files, err := filepath.Glob(filepath.Join("testdata", pattern))
	if err != nil || len(files) == 0 {
		f.Fatalf("seeds: %v %v", files, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parse(bytes.NewReader(b))
		if err != nil {
			if got != (Transit{}) || err.Error() == "" {
				t.Fatalf("error %v with %+v", err, got)
			}
			return
		}
		if got.Sent < 0 || got.Received < 0 || !bytes.Contains(b, []byte(has)) {
			t.Fatalf("counts %+v from %q", got, b)
		}
	})
}

// stallDevice is a Device whose Write blocks until release is closed: a
// delay line stalled with a packet in hand.
type stallDevice struct {
	*chanDevice
	entered chan struct{} // closed when the first Write starts
	release chan struct{}
	once    sync.Once
}

func (d *stallDevice) Write(p []byte) (int, error) {
	d.once.Do(func() { close(d.entered) })
	<-d.release
	return d.chanDevice.Write(p)
}

// TestSettleWaitsForHeldPackets: a delay line that holds a packet (its
// writer stalled) keeps the path from settling, however long the ends'
// counters stay unchanged (they do here: the line is between two
// devices of the test, so no namespace sends anything). Settle gives up
// saying so; once the packet is written it settles.
func TestSettleWaitsForHeldPackets(t *testing.T) {
	requireRoot(t)
	cli, err := NewNamespace("slowlab-settle-cli")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	srv, err := NewNamespace("slowlab-settle-srv")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	src, dst := newChanDevice(), &stallDevice{chanDevice: newChanDevice(), entered: make(chan struct{}), release: make(chan struct{})}
	l := StartLine(src, dst, LineConfig{})
	var release sync.Once
	defer func() {
		release.Do(func() { close(dst.release) })
		close(src.in)
		l.Wait()
	}()
	p := &Path{Name: "slowlab-settle", Method: MethodTUN, Client: cli, Server: srv, lines: []*DelayLine{l}}
	src.in <- pkt(1, 100)
	<-dst.entered
	if _, err := p.Settle(context.Background()); !errors.Is(err, ErrNotQuiet) {
		t.Fatalf("settled with a packet held: %v", err)
	}
	release.Do(func() { close(dst.release) })
	if _, err := p.Settle(context.Background()); err != nil {
		t.Fatalf("the packet written, still not settled: %v", err)
	}
	if len(dst.written()) != 1 {
		t.Fatalf("%d packets written, want 1", len(dst.written()))
	}
}
