package report

// What the sections report still draws share over runs.csv and the
// other results files: a condition of runs.csv's rows, the routes'
// order, reading a file a directory may lack, a figure's file name.

import (
	"fmt"

	"github.com/slowlab/slowlab/recorder"
)

// condKey is a condition of runs.csv's rows: route, server and slow
// clients.
type condKey struct {
	route, server string
	slow          int
}

func (k condKey) label() string {
	return fmt.Sprintf("%s, %s, %d slow", k.route, k.server, k.slow)
}

func keyOf(r recorder.Run) condKey { return condKey{r.Route, r.Server, r.SlowClients} }

// routeRank orders routes as docs/experiments.md lists them; others follow.
var routeRank = map[string]int{"direct": 0, "proxy-buffering-off": 1, "proxy-buffering-on": 2}

// readOptional is recorder.ReadOptional: dir's file of row type T, present
// false when it does not exist.
func readOptional[T recorder.Row[T]](dir string) (rows []T, present bool, err error) {
	return recorder.ReadOptional[T](dir)
}

// slug is Slug, for a figure's file name.
func slug(s string) string { return Slug(s) }

// mibScale turns bytes into MiB.
const mibScale = 1.0 / (1 << 20)
