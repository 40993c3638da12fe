package lab

import (
	"fmt"
	"time"

	"github.com/slowlab/slowlab/loadgen"
	"github.com/slowlab/slowlab/target"
)

// Condition is one cell of the slow-client matrix.
type Condition struct {
	Route       Route      `yaml:"route"`
	Server      ServerSpec `yaml:"server"`
	SlowClients int        `yaml:"slow_clients"`
}

// SlowClient is the slow-client experiment (EXPERIMENTS.md section 1): the
// matrix and every load parameter. DefaultSlowClient gives the published one.
type SlowClient struct {
	Conditions []Condition
	Reps       int

	FastPath     string        // path of the fast endpoint
	FastRate     float64       // requests per second, open loop, new connection each
	FastDuration time.Duration // how long fast requests are sent
	FastOffset   time.Duration // fast requests start this long after the slow connections
	FastTimeout  time.Duration

	LargePath   string
	LargeSize   int64   // bytes of each slow download
	ReadRate    float64 // bytes per second each slow client consumes
	RcvBuf      int     // SO_RCVBUF of slow clients, set before connect
	ReadSize    int     // at most this many bytes per read
	SlowTimeout time.Duration
}

// PublishedServer is the main condition's server: Gunicorn sync, 2 workers.
var PublishedServer = ServerSpec{Model: "sync", Workers: 2, Threads: 1}

// DefaultSlowClient returns the published matrix: 3 routes x {0,1,2} slow
// clients on sync-2, plus gthread 1x4 direct with 2 slow clients; 3 reps.
func DefaultSlowClient() SlowClient {
	var conds []Condition
	for _, r := range Routes {
		for slow := 0; slow <= 2; slow++ {
			conds = append(conds, Condition{Route: r, Server: PublishedServer, SlowClients: slow})
		}
	}
	conds = append(conds, Condition{Route: RouteDirect, Server: ServerSpec{Model: "gthread", Workers: 1, Threads: 4}, SlowClients: 2})
	return SlowClient{
		Conditions:   conds,
		Reps:         3,
		FastPath:     "/fast",
		FastRate:     8,
		FastDuration: 9 * time.Second,
		FastOffset:   250 * time.Millisecond,
		FastTimeout:  loadgen.DefaultTimeout,
		LargePath:    "/large",
		LargeSize:    target.DefaultLargeSize,
		ReadRate:     loadgen.DefaultSlowRate,
		RcvBuf:       loadgen.DefaultSlowRcvBuf,
		ReadSize:     loadgen.DefaultSlowReadSize,
		SlowTimeout:  2 * time.Minute,
	}
}

// Validate names the first field that cannot run.
func (e SlowClient) Validate() error {
	if len(e.Conditions) == 0 {
		return fmt.Errorf("conditions: none given")
	}
	for i, c := range e.Conditions {
		if !c.Route.Valid() {
			return fmt.Errorf("conditions[%d].route %q: allowed %s, %s, %s", i, c.Route, RouteDirect, RouteBufferingOff, RouteBufferingOn)
		}
		o := target.Options{Model: target.Model(c.Server.Model), Workers: c.Server.Workers, Threads: max(c.Server.Threads, 1), LargeSize: e.LargeSize, BlockSize: target.DefaultBlockSize}
		if err := o.Validate(); err != nil {
			return fmt.Errorf("conditions[%d].server: %v", i, err)
		}
		if c.SlowClients < 0 || c.SlowClients > 1000 {
			return fmt.Errorf("conditions[%d].slow_clients %d: allowed 0 to 1000", i, c.SlowClients)
		}
	}
	switch {
	case e.Reps < 1 || e.Reps > 1000:
		return fmt.Errorf("reps %d: allowed 1 to 1000", e.Reps)
	case !(e.FastRate > 0) || e.FastRate > 10000:
		return fmt.Errorf("fast rate %v: allowed more than 0 up to 10000 requests/s", e.FastRate)
	case e.FastDuration <= 0:
		return fmt.Errorf("fast duration %s: must be more than 0", e.FastDuration)
	case e.FastOffset < 0:
		return fmt.Errorf("fast offset %s: must be 0 or more", e.FastOffset)
	case e.FastTimeout <= 0:
		return fmt.Errorf("fast timeout %s: must be more than 0", e.FastTimeout)
	case e.LargeSize < 0:
		return fmt.Errorf("large size %d: must be 0 or more bytes", e.LargeSize)
	case e.SlowTimeout <= 0:
		return fmt.Errorf("slow timeout %s: must be more than 0", e.SlowTimeout)
	}
	return loadgen.SlowReader{RcvBuf: e.RcvBuf, ReadSize: e.ReadSize, Rate: e.ReadRate}.Validate()
}

// Runs expands the matrix: every condition once per rep, reps outermost so
// a drift over time spreads across conditions instead of hitting one.
func (e SlowClient) Runs() []RunSpec {
	var runs []RunSpec
	for rep := 1; rep <= e.Reps; rep++ {
		for _, c := range e.Conditions {
			runs = append(runs, RunSpec{Condition: c, Rep: rep})
		}
	}
	return runs
}

// RunSpec is one run of the matrix.
type RunSpec struct {
	Condition
	Rep int
}

// ID is the run's run_id: route, server, slow clients and rep.
func (r RunSpec) ID() string {
	return fmt.Sprintf("%s.%s.slow%d.rep%d", r.Route, r.Server.Name(), r.SlowClients, r.Rep)
}

// Duration is the run's intrinsic length: the longer of the fast schedule and
// the slow downloads at their paced rate.
func (e SlowClient) Duration(slow int) time.Duration {
	d := e.FastOffset + e.FastDuration
	if slow > 0 && e.ReadRate > 0 {
		if dl := time.Duration(float64(e.LargeSize) / e.ReadRate * float64(time.Second)); dl > d {
			d = dl
		}
	}
	return d
}
