package stalledreader

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/stack"
	"github.com/slowlab/slowlab/recorder"
)

// Bad input fails Validate with an error naming the field, before
// anything starts.
func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(c *Config)
	}{
		{"published", "", func(*Config) {}},
		{"no conditions", "conditions: none given", func(c *Config) { c.Conditions = nil }},
		{"give up before stall", "client.give_up 20s: must outlast client.stall (20s)", func(c *Config) { c.Client.GiveUp = c.Client.Stall }},
		{"app timeout past give up", "conditions[0].app_timeout 40s: must be shorter than client.give_up (40s)",
			func(c *Config) { c.Conditions[0].AppTimeout = c.Client.GiveUp }},
		{"send timeout past give up", "conditions[1].send_timeout 1m0s: must be shorter than client.give_up (40s)",
			func(c *Config) { c.Conditions[1].SendTimeout = lab.Duration(time.Minute) }},
		{"send timeout direct", "conditions[0].send_timeout 5s: route direct has no proxy",
			func(c *Config) { c.Conditions[0].SendTimeout = lab.Duration(5 * time.Second) }},
		{"app timeout async", "conditions[6].app_timeout 5s: server async is an event-loop server",
			func(c *Config) { c.Conditions[6].AppTimeout = lab.Duration(5 * time.Second) }},
		{"app timeout uvicorn", "conditions[6].app_timeout 5s: server uvicorn-1 is an event-loop server",
			func(c *Config) {
				c.Conditions[6].Server, c.Conditions[6].AppTimeout = "uvicorn-1", lab.Duration(5*time.Second)
			}},
		{"fractional timeout", "conditions[0].app_timeout 1.5s: allowed 0",
			func(c *Config) { c.Conditions[0].AppTimeout = lab.Duration(1500 * time.Millisecond) }},
		{"mode", `conditions[0].mode "pause"`, func(c *Config) { c.Conditions[0].Mode = "pause" }},
		{"clients", "conditions[0].clients 0: allowed 1 to 100", func(c *Config) { c.Conditions[0].Clients = 0 }},
		{"route", `conditions[0].route "proxy-request-buffering-on"`, func(c *Config) { c.Conditions[0].Route = stack.RouteRequestBufferingOn }},
		{"size", "size 512: allowed 1k to 1g", func(c *Config) { c.Size = 512 }},
		{"size too big", "size 2g: allowed 1k to 1g", func(c *Config) { c.Size = 2 << 30 }},
		{"rate", "client.rate 100: allowed 1k to 1g bytes/s", func(c *Config) { c.Client.Rate = 100 }},
		{"stall after size", "client.stall_after 16m: allowed 0 to less than size (16m)", func(c *Config) { c.Client.StallAfter = c.Size }},
		{"stall", "client.stall 0s: allowed 1s to 1h", func(c *Config) { c.Client.Stall = 0 }},
		{"read size", "client.read_size 0: allowed 1 byte to 16m", func(c *Config) { c.Client.ReadSize = 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.edit(c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got %v, want %s...", err, tc.want)
			}
		})
	}
}

// --quick validates and keeps a size the user gave.
func TestQuick(t *testing.T) {
	q := Published()
	q.Reduce()
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	if q.Size != 4<<20 || len(q.Conditions) != 5 {
		t.Errorf("quick: %+v", q)
	}
	own := Published()
	own.Size = 8 << 20
	own.Reduce()
	if own.Size != 8<<20 {
		t.Errorf("--quick replaced the size given: %d", own.Size)
	}
}

// ender attributes each download from evidence about that download only:
// a WORKER TIMEOUT naming another worker, or a "client timed out" line
// naming another download, says nothing about it; a download the client
// gave up on (20.2 s after t0) was ended by what was logged before that.
func TestEnder(t *testing.T) {
	at := func(sec int) time.Time { return time.Date(2026, 12, 3, 12, 0, sec, 0, time.UTC) }
	d := func(client int, outcome string) Download {
		return Download{ClientKey: lab.ClientKey{Client: client}, Outcome: outcome, StalledS: recorder.Some(0.1), ResumedS: recorder.Some(20), EndS: 20.2}
	}
	served := map[string]stack.Served{
		"r/0": {PID: 100, PeerPort: 5000, Ended: true},                 // killed: Gunicorn calls close() as the worker exits
		"r/1": {PID: 101, PeerPort: 5001, Ended: true},                 // NGINX closed its upstream: the worker goes on
		"r/2": {PID: 100, PeerPort: 5002, Ended: true, Followed: true}, // an earlier body of pid 100
		"r/3": {PID: 102, PeerPort: 5003, Ended: true, Complete: true},
		"r/4": {PID: 103, PeerPort: 5004},
	}
	gunicorn := []stack.WorkerTimeout{{PID: 100, At: at(4)}}
	for _, tc := range []struct {
		name string
		d    Download
		id   string
		e    evidence
		want string
	}{
		{"complete", d(3, OutcomeComplete), "r/3", evidence{served: served, kills: []stack.WorkerTimeout{{PID: 102}}}, EndedByNone},
		{"client bound", d(0, OutcomeTimeout), "r/0", evidence{served: served, kills: []stack.WorkerTimeout{{PID: 101, At: at(4)}}}, EndedByClient},
		{"killed before the client gave up", d(0, OutcomeTimeout), "r/0", evidence{served: served, kills: gunicorn}, EndedByAppTimeout},
		{"cut before the client gave up", d(1, OutcomeTimeout), "r/1", evidence{served: served, cuts: []stack.ClientTimeout{{Target: "/large?download=1", At: at(19)}}}, EndedBySendTimeout},
		{"cut after the client gave up", d(1, OutcomeTimeout), "r/1", evidence{served: served, cuts: []stack.ClientTimeout{{Target: "/large?download=1", At: at(21)}}}, EndedByClient},
		{"cut in the second the client gave up", d(1, OutcomeTimeout), "r/1", evidence{served: served, cuts: []stack.ClientTimeout{{Target: "/large?download=1", At: at(20)}}}, EndedByUnknown},
		{"both before the client gave up, one second", d(0, OutcomeTimeout), "r/0", evidence{served: served, kills: gunicorn, cuts: []stack.ClientTimeout{{Target: "/large?download=0", At: at(4)}}}, EndedByUnknown},
		{"its worker killed", d(0, OutcomeTruncated), "r/0", evidence{served: served, kills: gunicorn}, EndedByAppTimeout},
		{"another worker killed", d(1, OutcomeTruncated), "r/1", evidence{served: served, kills: gunicorn}, EndedByUnknown},
		{"its worker killed later", d(2, OutcomeTruncated), "r/2", evidence{served: served, kills: gunicorn}, EndedByUnknown},
		{"app recorded it complete", d(3, OutcomeTruncated), "r/3", evidence{served: served, kills: []stack.WorkerTimeout{{PID: 102}}}, EndedByUnknown},
		{"its connection aborted", d(4, OutcomeTruncated), "r/4", evidence{served: served, kills: []stack.WorkerTimeout{{PeerPort: 5004}}}, EndedByAppTimeout},
		{"another connection aborted", d(1, OutcomeTruncated), "r/1", evidence{served: served, kills: []stack.WorkerTimeout{{PeerPort: 5004, PID: 101}}}, EndedByUnknown},
		{"no send log", d(0, OutcomeTruncated), "r/0", evidence{kills: gunicorn}, EndedByUnknown},
		{"proxy cut it", d(1, OutcomeTruncated), "r/1", evidence{served: served, kills: gunicorn, cuts: []stack.ClientTimeout{{Target: "/large?download=1"}}}, EndedBySendTimeout},
		{"proxy cut another", d(1, OutcomeTruncated), "r/1", evidence{served: served, cuts: []stack.ClientTimeout{{Target: "/large?download=11"}, {Target: "/large"}}}, EndedByUnknown},
		{"reset, cut", d(1, OutcomeReset), "r/1", evidence{cuts: []stack.ClientTimeout{{Target: "/large?x=1&download=1"}}}, EndedBySendTimeout},
		{"killed, then cut", d(0, OutcomeTruncated), "r/0", evidence{served: served, kills: gunicorn, cuts: []stack.ClientTimeout{{Target: "/large?download=0", At: at(9)}}}, EndedByAppTimeout},
		{"cut, then killed", d(0, OutcomeTruncated), "r/0", evidence{served: served, kills: gunicorn, cuts: []stack.ClientTimeout{{Target: "/large?download=0", At: at(2)}}}, EndedBySendTimeout},
		{"both in one second", d(0, OutcomeTruncated), "r/0", evidence{served: served, kills: gunicorn, cuts: []stack.ClientTimeout{{Target: "/large?download=0", At: at(4).Add(500 * time.Millisecond)}}}, EndedByUnknown},
		{"nothing", d(0, OutcomeReset), "r/0", evidence{served: served}, EndedByUnknown},
	} {
		if got := ender(tc.d, tc.id, tc.e, at(0)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Each download's URL names it, the rest of the query kept.
func TestDownloadURL(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:8080/large?size=10")
	if got := downloadURL(u, 3).String(); got != "http://127.0.0.1:8080/large?download=3&size=10" {
		t.Errorf("got %s", got)
	}
	if u.RawQuery != "size=10" {
		t.Errorf("the original URL changed: %s", u)
	}
}

// A scenario with two faults reports the one Validate has always checked
// first: no conditions before the size, the size and the client before
// any condition (a condition's timeouts are checked against the client's
// bound), the first bad condition before a later one, and every
// condition before /fast. The messages are those the checks in their
// former order gave.
func TestValidateTwoFaults(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(c *Config)
	}{
		{"no conditions, size", "conditions: none given",
			func(c *Config) { c.Conditions, c.Size = nil, 512 }},
		{"size, route", "size 512: allowed 1k to 1g",
			func(c *Config) { c.Size, c.Conditions[0].Route = 512, stack.RouteRequestBufferingOn }},
		{"rate, mode", "client.rate 100: allowed 1k to 1g bytes/s",
			func(c *Config) { c.Client.Rate, c.Conditions[2].Mode = 100, "pause" }},
		{"give up, app timeout past it", "client.give_up 20s: must outlast client.stall (20s), up to 1h",
			func(c *Config) {
				c.Client.GiveUp, c.Conditions[0].AppTimeout = c.Client.Stall, lab.Duration(30*time.Second)
			}},
		{"two conditions", "conditions[1].clients 0: allowed 1 to 100",
			func(c *Config) { c.Conditions[1].Clients, c.Conditions[4].Mode = 0, "pause" }},
		{"condition, fast", `conditions[3].mode "pause": allowed stall, slow`,
			func(c *Config) { c.Conditions[3].Mode, c.Fast.Rate = "pause", 0 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.edit(c)
			if err := c.Validate(); err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
		})
	}
}
