package appserver

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// MaxPageResources bounds /page?n= (sub-resources of one document).
const MaxPageResources = 1000

// redirect answers GET /redirect?to=URL&status=301|302 (302 when not
// given) with that status and Location: URL, a path on this origin
// ("/bytes?n=1024") or an http or https URL (another origin), and its
// Server-Timing: the hop of a redirect chain, which the latency-gap
// experiment times hop by hop.
func (s *Server) redirect(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	code := http.StatusFound
	if v := q.Get("status"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || (n != http.StatusMovedPermanently && n != http.StatusFound) {
			http.Error(w, fmt.Sprintf("status %q: want 301 or 302", v), http.StatusBadRequest)
			s.done("redirect", http.StatusBadRequest, start)
			return
		}
		code = n
	}
	to := q.Get("to")
	if err := checkTarget(to); err != nil {
		http.Error(w, "to: "+err.Error(), http.StatusBadRequest)
		s.done("redirect", http.StatusBadRequest, start)
		return
	}
	if !s.work(w, r, "redirect", start) {
		return
	}
	w.Header().Set("Location", to)
	w.Header().Set("Content-Length", "0")
	serverTiming(w, start)
	w.WriteHeader(code)
	s.done("redirect", code, start)
}

// checkTarget accepts a path on this origin or an http(s) URL with a host.
func checkTarget(to string) error {
	if to == "" {
		return fmt.Errorf("missing (want a path such as /bytes?n=1024 or an http(s) URL)")
	}
	u, err := url.Parse(to)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", to)
	case u.Scheme == "" && u.Host == "" && strings.HasPrefix(to, "/") && !strings.HasPrefix(to, "//"):
		return nil
	case (u.Scheme == "http" || u.Scheme == "https") && u.Host != "":
		return nil
	}
	return fmt.Errorf("%q: want a path starting with / or an http(s) URL with a host", to)
}

// page answers GET /page?n=N&size=S[&cross=ORIGIN] with an HTML document
// that refers to N sub-resources, <img src="/bytes?n=S&i=K">, K from 0:
// the even ones on this origin and, with cross (an http or https origin,
// scheme://host:port), the odd ones there; without it, all here. The
// document's own work (?work=) is spent before it is written; the
// sub-resources' work is ?sub_work= and sub_work_kind=, passed on as
// their work and work_kind.
func (s *Server) page(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	q := r.URL.Query()
	bad := func(msg string) {
		http.Error(w, msg, http.StatusBadRequest)
		s.done("page", http.StatusBadRequest, start)
	}
	n, err := strconv.Atoi(q.Get("n"))
	if err != nil || n < 0 || n > MaxPageResources {
		bad(fmt.Sprintf("n %q: want 0..%d sub-resources", q.Get("n"), MaxPageResources))
		return
	}
	size, err := strconv.ParseInt(q.Get("size"), 10, 64)
	if err != nil || size < 0 || size > maxBytes {
		bad(fmt.Sprintf("size %q: want 0..%d bytes", q.Get("size"), maxBytes))
		return
	}
	cross := q.Get("cross")
	if cross != "" {
		u, err := url.Parse(cross)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
			bad(fmt.Sprintf("cross %q: want an http(s) origin, scheme://host:port", cross))
			return
		}
		cross = u.Scheme + "://" + u.Host
	}
	sub := ""
	if v := q.Get("sub_work"); v != "" {
		d, err := time.ParseDuration(v)
		kind := q.Get("sub_work_kind")
		if err != nil || d < 0 || d > MaxWork || (kind != "" && kind != WorkSleep && kind != WorkCPU) {
			bad(fmt.Sprintf("sub_work %q, sub_work_kind %q: want a duration from 0 to %s and %s or %s", v, kind, MaxWork, WorkSleep, WorkCPU))
			return
		}
		sub = "&work=" + url.QueryEscape(v)
		if kind != "" {
			sub += "&work_kind=" + kind
		}
	}
	if !s.work(w, r, "page", start) {
		return
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><title>slowlab page</title></head><body>\n")
	for i := range n {
		origin := ""
		if cross != "" && i%2 == 1 {
			origin = cross
		}
		fmt.Fprintf(&b, "<img src=\"%s\">\n", html.EscapeString(fmt.Sprintf("%s/bytes?n=%d&i=%d%s", origin, size, i, sub)))
	}
	b.WriteString("</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	serverTiming(w, start)
	w.Write([]byte(b.String()))
	s.done("page", http.StatusOK, start)
}
