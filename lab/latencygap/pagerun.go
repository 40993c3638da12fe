package latencygap

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/netem"
	"github.com/slowlab/slowlab/recorder"
)

// originBase is the scheme://host:port of origin k (0: the server's):
// its IP, or its lab name with DNS.
func (s *session) originBase(k int, names bool) string {
	srv := s.server
	if k > 0 {
		srv = s.origins[k-1]
	}
	host := s.path.ServerAddr.String()
	if names {
		host = originName(k)
	}
	return srv.scheme + "://" + net.JoinHostPort(host, srv.port)
}

// ensureOrigins starts the servers of origins 2 to n (another port each,
// same TLS mode) beside the server's.
func (s *session) ensureOrigins(n int) error {
	for len(s.origins) < n-1 {
		o, err := s.serve(s.server.mode)
		if err != nil {
			return fmt.Errorf("origin %d: %w", len(s.origins)+2, err)
		}
		s.origins = append(s.origins, o)
	}
	return nil
}

// loadURL is the first URL of a load condition's loads: its redirect
// chain's first hop (each hop on the next origin when cross) or its
// page, whose odd sub-resources are on origin 2; every request spends
// the condition's work.
func (s *session) loadURL(sp spec, names bool) *url.URL {
	work := sp.work.query()
	l := sp.load
	var u string
	switch l.kind {
	case KindRedirect:
		at := func(hop int) int {
			if l.origin == OriginCross {
				return hop
			}
			return 0
		}
		u = fmt.Sprintf("%s/bytes?n=%d%s", s.originBase(at(l.redirects), names), sp.size, work)
		for hop := l.redirects - 1; hop >= 0; hop-- {
			status := http.StatusFound
			if hop == 0 {
				status = http.StatusMovedPermanently
			}
			u = fmt.Sprintf("%s/redirect?status=%d&to=%s%s", s.originBase(at(hop), names), status, url.QueryEscape(u), work)
		}
	case KindPage:
		u = fmt.Sprintf("%s/page?n=%d&size=%d&cross=%s%s", s.originBase(0, names), l.resources, sp.size,
			url.QueryEscape(s.originBase(min(1, l.origins()-1), names)), work)
		if sp.work.D > 0 {
			u += fmt.Sprintf("&sub_work=%s&sub_work_kind=%s", sp.work.D, sp.work.Kind)
		}
	}
	parsed, _ := url.Parse(u)
	return parsed
}

// measureLoads implements measure for a load condition (loadModes),
// again while the path was not faithful; its rows written.
func (s *session) measureLoads(ctx context.Context, sp spec, run RunRow) (RunRow, error) {
	l := sp.load
	if err := s.ensureOrigins(l.origins()); err != nil {
		run.Status, run.Reason = recorder.RunFailed, err.Error()
		return run, err
	}
	res, err := startResolver(ctx, s.path, sp.settings)
	if err != nil {
		run.Status, run.Reason = recorder.RunFailed, err.Error()
		return run, err
	}
	defer res.close()
	ports := map[string]int{s.server.port: 1}
	for i, o := range s.origins {
		ports[o.port] = i + 2
	}
	origin := func(host string) int {
		_, port, _ := net.SplitHostPort(host)
		return ports[port]
	}
	first := s.loadURL(sp, dnsOn(sp.settings))
	dial := parallelDial(s.path, s.c.CongestionControl)
	var fetches []Fetch
	var loads []Load
	var pages []Page
	for try := 1; ; try++ {
		s.path.TakeLateness()
		fetches, loads, pages = s.loadModes(ctx, sp, run.RunID, first, dial, res, origin)
		lt := s.path.TakeLateness()
		for i := range pages {
			p := &pages[i]
			p.DelayMethod, p.Valid = string(s.path.Method), lt.Valid()
			if p.DelayMethod == string(netem.MethodTUN) && lt.Packets > 0 {
				p.LatenessP99MS, p.LatenessMaxMS = recorder.Some(ms(lt.P99)), recorder.Some(ms(lt.Max))
			}
		}
		if lt.Valid() || try == tries || ctx.Err() != nil {
			break
		}
		s.env.Logf("        path not faithful (delay line lateness p99 %.3f ms above %s): discarded, measuring again (try %d of %d)",
			ms(lt.P99), netem.MaxP99Lateness, try+1, tries)
	}
	s.pages[run.RunID] = pages
	err = lab.Judge(ctx, lab.VerdictOf(&run), nil, errors.Join(lab.WriteRows(s.files.fetches, fetches), lab.WriteRows(s.files.loads, loads), lab.WriteRows(s.files.pages, pages)))
	return run, err
}

// loadModes measures a load condition once in each of its modes: a
// warm-up load, then Reps x Runs loads, each by a new browser (a first
// visit: no connection open) sharing the mode's DNS cache and TLS
// sessions; its requests, loads and a row per mode.
func (s *session) loadModes(ctx context.Context, sp spec, id string, first *url.URL, dial dialFunc, res *resolver,
	origin func(string) int) ([]Fetch, []Load, []Page) {
	l := sp.load
	configured := ms(sp.path.rtt())
	var fetches []Fetch
	var loads []Load
	var pages []Page
	for _, mode := range l.modes() {
		key := LoadKey{RunID: id, Kind: l.kind, Mode: mode, Protocol: l.proto, Redirects: l.redirects, RedirectOrigin: l.origin,
			Resources: l.resources, SizeBytes: sp.size, ConfiguredRTTMS: configured}
		bound := boundMS(l, mode, sp.settings)
		clientTLS := modeTLS(s.server.clientTLS)
		var nd *nameDialer
		if res != nil {
			nd = newNameDialer(dial, res.addr) // its own cache: a mode looks up on its own
		}
		for seq := -1; seq < s.c.Reps*s.c.Runs && ctx.Err() == nil; seq++ {
			b := newBrowser(dial, nd, clientTLS, s.path.ServerAddr.String(), l.proto, mode == ModeKeepAlive, origin)
			lctx, cancel := context.WithTimeout(ctx, time.Duration(s.c.Timeout))
			var fs []Fetch
			var err error
			if l.kind == KindRedirect {
				fs, err = b.chain(lctx, first, l.redirects, sp.size)
			} else {
				fs, err = b.page(lctx, first, l.resources, sp.size)
			}
			cancel()
			b.close()
			if seq < 0 {
				continue // warm-up: fills the DNS cache, and the session a new connection resumes
			}
			for i := range fs {
				fs[i].LoadKey, fs[i].Load, fs[i].Settings = key, seq, sp.settings
			}
			fetches, loads = append(fetches, fs...), append(loads, summarizeLoad(key, seq, sp.settings, bound, fs, err))
			s.env.RequestDone(id)
		}
		pages = append(pages, SummarizeLoads(key, sp.settings, bound, loads)) // of key.Mode's loads
	}
	return fetches, loads, pages
}

// pageLine is a load condition's progress line.
func pageLine(ps []Page) string {
	modes := make([]string, len(ps))
	for i, p := range ps {
		modes[i] = fmt.Sprintf("%s: %s ms (bound %.0f ms), server sum %s ms, max %s ms, visible %s%%, %s connections, %d loads",
			p.Mode, lab.Num(p.LoadMS, 1), p.BoundMS, lab.Num(p.ServerSumMS, 2), lab.Num(p.ServerMaxMS, 2), lab.Num(p.VisiblePct, 1),
			lab.Num(p.Connections, 0), p.Loads)
	}
	line := strings.Join(modes, "; ")
	if len(ps) > 0 && !ps[0].Valid {
		line += fmt.Sprintf("  INVALID: delay line lateness p99 %s ms above %s", lab.Num(ps[0].LatenessP99MS, 3), netem.MaxP99Lateness)
	}
	return line
}

// readPages reads gap-pages.csv's rows by run id.
func (s *session) readPages() (map[string][]Page, error) {
	ps, err := recorder.ReadFile[Page](filepath.Join(s.env.Out, pageFile))
	if err != nil {
		return nil, err
	}
	out := map[string][]Page{}
	for _, p := range ps {
		out[p.RunID] = append(out[p.RunID], p)
	}
	return out, nil
}
