package latencygap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/slowlab/slowlab/internal/runcert"
	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
)

// Result is what Run wrote: its runs (gap-runs.csv), resumed ones first,
// and their rows.
type Result struct {
	lab.MatrixResult[RunRow]
	// Rows are the conditions of the completed runs, resumed ones
	// included, and of a run interrupted with what it measured.
	Rows []Row
	// Pages are the load conditions (redirect chains and pages) of those
	// runs, a row per mode (gap-pages.csv).
	Pages []Page
}

var _ lab.Reasoned = (*Result)(nil)

// ReasonsFile implements lab.Reasoned: gap-runs.csv says why when every
// run failed or was aborted, else gap-requests.csv (each request's error).
func (r *Result) ReasonsFile() string {
	if r.MatrixResult.AllFailed() {
		return runFile
	}
	return requestFile
}

// AllFailed implements lab.Result: every run failed, or no condition got
// a request through.
func (r *Result) AllFailed() bool {
	return r.MatrixResult.AllFailed() || len(r.Rows) > 0 && !slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Gap.Runs > 0 })
}

// Valid reports whether every condition's path delayed faithfully, the
// load conditions' too.
func (r *Result) Valid() bool {
	return !slices.ContainsFunc(r.Rows, func(row Row) bool { return !row.Path.Valid }) &&
		!slices.ContainsFunc(r.Pages, func(p Page) bool { return !p.Valid })
}

// tries is how often a condition whose path was not faithful (its delay
// line ran late, or its measured RTT is off) is measured before its last
// attempt is kept, marked invalid.
const tries = 3

// spec is one run: a condition, its Reps x Runs requests (or loads) per
// mode.
type spec struct {
	path     pathCond
	work     Work
	size     int
	settings Settings
	load     loadCond // a redirect chain or a page; zero for a gap condition
}

// ID implements lab.Planned: runID's name of the condition.
func (s spec) ID() string { return runID(s.size, ms(s.path.rtt()), s.settings) + s.load.idSuffix() }

// specs are the runs of the grid, in the order they share a path (and a
// server in one TLS mode).
func (c *Config) specs() []spec {
	var out []spec
	for _, pc := range c.paths() {
		for _, mode := range c.tlsModes() {
			for _, w := range c.works() {
				for _, dc := range c.dnsConds() {
					for _, size := range c.Sizes {
						st := pc.settings(mode)
						st.WorkMS, st.WorkKind, st.DNS, st.DNSFamilies = ms(w.D), w.Kind, dc.mode, dc.families
						if dc.families == FamiliesLate {
							st.DNSAAAADelayMS = ms(time.Duration(c.DNSAAAADelay))
						}
						if dc.mode != DNSNone {
							st.DNSDelayMS = ms(time.Duration(c.DNSDelay))
						}
						for _, l := range append([]loadCond{{}}, c.loads()...) { // the gap condition, then the loads
							out = append(out, spec{path: pc, work: w, size: int(size), settings: st, load: l})
						}
					}
				}
			}
		}
	}
	return out
}

// Run implements lab.Config: every condition of the grid as one run of
// lab.Matrix, writing resultsFiles. It serves from the lab process. It
// needs root for the namespaces; without it, it fails before writing
// anything, saying so. Consecutive runs on the same path share it (and
// its server in one TLS mode). A condition whose path was not faithful is
// measured again, up to tries times. Cancelling ctx keeps what was
// measured, removes the namespaces and returns ctx's error.
func (c *Config) Run(ctx context.Context, env *lab.Env) (lab.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := netem.Check(); err != nil {
		return nil, fmt.Errorf("latency-gap: %w", err)
	}
	s := &session{c: c, env: env, ctx: ctx, rows: map[string]Row{}, pages: map[string][]Page{}, loads: map[string]bool{}}
	for _, sp := range c.specs() {
		if sp.load.kind != "" {
			s.loads[sp.ID()] = true
		}
	}
	defer s.close()
	m := &lab.Matrix[spec, RunRow]{Specs: c.specs(), Line: s.line, Open: s.open,
		Files: resultsFiles[1:], // but runFile
		Expected: func(sp spec) time.Duration {
			if sp.load.kind != "" {
				return loadsExpected(sp.load, sp.settings, sp.path, sp.work.D, c.Reps*c.Runs+1)
			}
			return time.Duration(c.Reps*c.Runs) * (5*sp.path.rtt() + 2*sp.work.D + 2*time.Millisecond + dnsCost(sp.settings, sp.path))
		},
		Measure: s.measure}
	runs, err := m.Run(ctx, env, c)
	s.close()
	rows, pages, rerr := s.resultRows(runs)
	return &Result{MatrixResult: lab.MatrixResult[RunRow]{Dir: env.Out, Runs: runs}, Rows: rows, Pages: pages}, errors.Join(err, rerr)
}

// files are the open results files of a latency-gap session.
type files struct {
	runs    *recorder.FileWriter[RunRow]
	gaps    *recorder.FileWriter[Gap]
	reqs    *recorder.FileWriter[Request]
	paths   *recorder.FileWriter[Path]
	fetches *recorder.FileWriter[Fetch]
	loads   *recorder.FileWriter[Load]
	pages   *recorder.FileWriter[Page]
}

// open implements lab.Matrix's Open: the files, created, or opened to
// append on resume.
func (s *session) open(dir string, resume bool) (lab.RowWriter[RunRow], func() error, error) {
	f := &s.files
	var err error
	if f.runs, err = lab.OpenFile[RunRow](dir, resume); err == nil {
		if f.gaps, err = lab.OpenFile[Gap](dir, resume); err == nil {
			if f.reqs, err = lab.OpenFile[Request](dir, resume); err == nil {
				f.paths, err = lab.OpenFile[Path](dir, resume)
			}
		}
	}
	if err == nil {
		if f.fetches, err = lab.OpenFile[Fetch](dir, resume); err == nil {
			if f.loads, err = lab.OpenFile[Load](dir, resume); err == nil {
				f.pages, err = lab.OpenFile[Page](dir, resume)
			}
		}
	}
	if err != nil {
		return nil, nil, errors.Join(err, f.close())
	}
	return f.runs, f.close, nil
}

// close closes the open files. It runs once, on open's error or from
// lab.Matrix as the session ends, and nothing writes to them after it.
func (f *files) close() error {
	return errors.Join(lab.CloseFile(f.runs), lab.CloseFile(f.gaps), lab.CloseFile(f.reqs), lab.CloseFile(f.paths),
		lab.CloseFile(f.fetches), lab.CloseFile(f.loads), lab.CloseFile(f.pages))
}

// session is a Run's state across its runs: the open files, the path and
// server consecutive runs share, and the rows it measured.
type session struct {
	c     *Config
	env   *lab.Env
	ctx   context.Context // the session's: the path and server outlive a run
	files files

	pc     pathCond
	path   *netem.Path   // nil until a run needs one
	cert   *runcert.Cert // the run's own server certificate, which the client trusts alone; nothing on disk
	server *server       // on path, in one TLS mode
	// origins are the servers of the other origins of the load
	// conditions (origin 2 and on), on the path in server's TLS mode.
	origins []*server

	rows  map[string]Row    // by run id, this session's
	pages map[string][]Page // by run id, this session's load conditions
	loads map[string]bool   // the run ids of load conditions
}

// server is the app serving on the path in one TLS mode.
type server struct {
	mode, scheme, port string
	clientTLS          *tls.Config // nil without TLS
	stop               func()
}

// on makes sure the path and server of sp are up, replacing those of the
// previous run when it differs.
func (s *session) on(sp spec) error {
	if s.path != nil && s.pc != sp.path {
		s.close()
	}
	var err error
	if s.path == nil {
		if s.path, err = netem.New(s.ctx, sp.path.netem(s.c)); err != nil {
			s.path = nil
			return fmt.Errorf("latency-gap at %s: network path: %w", sp.path, err)
		}
		s.pc = sp.path
		s.env.Logf("path %s: %s, %s, client %s, server %s, MTU %d, %s",
			s.path.Name, s.path.Method, sp.path, s.path.ClientAddr, s.path.ServerAddr, netem.MTU, s.path.CongestionControl())
	}
	if s.server != nil && s.server.mode == sp.settings.TLS {
		return nil
	}
	s.stopServer()
	if s.server, err = s.serve(sp.settings.TLS); err != nil {
		return fmt.Errorf("latency-gap at %s: %w", sp.path, err)
	}
	return nil
}

func (s *session) stopServer() {
	for _, o := range s.origins {
		o.stop()
	}
	s.origins = nil
	if s.server != nil {
		s.server.stop()
		s.server = nil
	}
}

// close stops the server and removes the path.
func (s *session) close() {
	s.stopServer()
	if s.path != nil {
		s.path.Close()
		s.path, s.cert = nil, nil
	}
}

// measure implements lab.Matrix's Measure: one condition on its path,
// its requests, gap.csv and gap-path.csv rows written. A path or server
// that cannot start ends the session, as a fault of the machine, not of
// the condition.
func (s *session) measure(ctx context.Context, sp spec, id string) (RunRow, error) {
	run := RunRow{RunID: id, Status: recorder.RunOK}
	if err := s.on(sp); err != nil {
		run.Status, run.Reason = recorder.RunFailed, err.Error()
		return run, err
	}
	if sp.load.kind != "" {
		return s.measureLoads(ctx, sp, run)
	}
	cond := condition{spec: sp, tls: s.server.clientTLS, id: id,
		url: fmt.Sprintf("%s/bytes?n=%d%s", s.originBase(0, dnsOn(sp.settings)), sp.size, sp.work.query())}
	row, reqs := s.c.condition(ctx, s.env, s.path, cond)
	row.Gap.RunID, row.Path.RunID = id, id
	s.rows[id] = row
	// Aborted when ctx ended, failed when its rows were not all written.
	err := lab.Judge(ctx, lab.VerdictOf(&run), nil, errors.Join(lab.WriteRows(s.files.reqs, reqs), s.files.gaps.Write(row.Gap), s.files.paths.Write(row.Path)))
	return run, err
}

// line is a finished run's progress line.
func (s *session) line(r RunRow) string {
	line := r.Status
	ps, page := s.pages[r.RunID]
	row, gap := s.rows[r.RunID]
	switch {
	case page:
		line = pageLine(ps)
	case gap:
		line = rowLine(row)
	}
	if (page || gap) && r.Status != recorder.RunOK {
		line += "  [" + r.Status + "]"
	}
	if r.Reason != "" {
		line += ": " + r.Reason
	}
	return line
}
