package stack

import (
	"testing"

	"github.com/slowlab/slowlab/appserver"
)

// ServedFrom reads the records in order: who began each body, whether it
// ended, and whether the same worker began another after it ended.
func TestServedFrom(t *testing.T) {
	start := func(id string, pid, port int) appserver.SendRecord {
		return appserver.SendRecord{Event: appserver.SendStart, ID: id, PID: pid, PeerPort: port}
	}
	end := func(id string, pid int, complete bool) appserver.SendRecord {
		return appserver.SendRecord{ID: id, PID: pid, Complete: complete, AppSendS: 1}
	}
	got := ServedFrom([]appserver.SendRecord{
		start("a", 10, 5000), end("a", 10, false), start("b", 10, 5001), // a's worker went on to b
		start("c", 11, 5002), end("c", 11, false), // c's worker (11) begins f after it
		start("d", 12, 5003),                                           // d never ended
		end("e", 13, true),                                             // an app that writes no start record
		start("f", 11, 5004), start("g", 11, 5005), end("f", 11, true), // threads: f ends while g runs
	})
	want := map[string]Served{
		"a": {PID: 10, PeerPort: 5000, Ended: true, Followed: true},
		"b": {PID: 10, PeerPort: 5001},
		"c": {PID: 11, PeerPort: 5002, Ended: true, Followed: true},
		"d": {PID: 12, PeerPort: 5003},
		"e": {PID: 13, Ended: true, Complete: true},
		"f": {PID: 11, PeerPort: 5004, Ended: true, Complete: true},
		"g": {PID: 11, PeerPort: 5005},
	}
	if len(got) != len(want) {
		t.Errorf("got %d requests, want %d: %+v", len(got), len(want), got)
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: %+v, want %+v", id, got[id], w)
		}
	}
}
