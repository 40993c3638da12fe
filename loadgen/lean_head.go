package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// A response header is read the way the net/http client's transport reads
// it, so that lean gives the same status, body, error and metrics. The
// common header (a status line "HTTP/1.x DDD ...", token names, plain
// values, at most one Content-Length of digits, one Transfer-Encoding:
// chunked on HTTP/1.1, no 1xx status, all in the read buffer) is parsed in
// place, with no allocation; anything else (a 1xx, a header longer than the
// buffer, folded or odd lines, conflicting lengths, other encodings, a cut
// header) is left in the buffer and parsed by net/http's own ReadResponse,
// with the transport's rules around it: 1xx responses other than 101
// skipped, a protocol switch's body the rest of the connection, no reuse
// after a status of 199 or less, and MaxResponseHeaderBytes read from the
// connection at most until the header's end, its 1xx responses included
// (leanConn.headerLeft), or the request fails with ErrHeaderTooLarge. The
// body is counted and discarded, never kept.

// leanHead is what lean needs of a response header.
type leanHead struct {
	status       int
	length       int64 // -1 when unknown
	chunked      bool
	close        bool
	serverTiming time.Duration
	// resp is the response when net/http parsed the header; its Body (or,
	// upgraded, the rest of the connection) is the body.
	resp     *http.Response
	upgraded bool
}

var crlfcrlf = []byte("\r\n\r\n")

// readLeanHead reads a response header from c.
func readLeanHead(c *leanConn, req *http.Request) (leanHead, error) {
	if head := peekLeanHead(c); head != nil {
		if h, ok := parseLeanHead(head); ok {
			c.br.Discard(len(head))
			return h, nil
		}
	}
	return readNetHTTPHead(c.br, req)
}

// peekLeanHead returns the header up to its blank line, still in c's
// buffer, or nil when it does not fit in the buffer or the connection
// failed first (the error is kept for the next read).
func peekLeanHead(c *leanConn) []byte {
	br := c.br
	from := 0
	for {
		buf, _ := br.Peek(br.Buffered())
		if i := bytes.Index(buf[from:], crlfcrlf); i >= 0 {
			return buf[:from+i+len(crlfcrlf)]
		}
		if len(buf) == br.Size() {
			return nil
		}
		from = max(0, len(buf)-len(crlfcrlf)+1)
		if _, err := br.Peek(len(buf) + 1); err != nil {
			c.pending = err // bufio hands an error out once: the parser that reads on must see it
			return nil
		}
	}
}

// parseLeanHead parses a header that ends with its blank line, ok=false
// for anything that is not the common case.
func parseLeanHead(head []byte) (h leanHead, ok bool) {
	h.length = -1
	line, rest, ok := cutCRLF(head)
	if !ok || len(line) < 12 || !(bytes.HasPrefix(line, []byte("HTTP/1.1 ")) || bytes.HasPrefix(line, []byte("HTTP/1.0 "))) ||
		len(line) > 12 && line[12] != ' ' {
		return h, false
	}
	for _, d := range line[9:12] {
		if d < '0' || d > '9' {
			return h, false
		}
		h.status = h.status*10 + int(d-'0')
	}
	if h.status < 200 { // 1xx, and the odd 0xx: net/http's rules
		return h, false
	}
	http10 := line[7] == '0'
	var f headFlags
	for {
		if line, rest, ok = cutCRLF(rest); !ok {
			return h, false
		}
		if len(line) == 0 {
			break
		}
		if !f.field(&h, line, http10) {
			return h, false
		}
	}
	if f.badTrailer && h.chunked {
		return h, false
	}
	h.close = f.close || http10 && !f.keepAlive
	if h.chunked {
		h.length = -1
	}
	if h.status == http.StatusNoContent || h.status == http.StatusNotModified {
		h.length, h.chunked = 0, false
	} else if h.length < 0 && !h.chunked {
		h.close = true // the body ends with the connection
	}
	return h, true
}

// headFlags are what parseLeanHead gathers beside leanHead.
type headFlags struct {
	length, te, serverTiming bool // seen
	close, keepAlive         bool // Connection tokens
	badTrailer               bool // Trailer names a field net/http refuses there
}

// field takes one header line, false when it is not a plain one.
func (f *headFlags) field(h *leanHead, line []byte, http10 bool) bool {
	if line[0] == ' ' || line[0] == '\t' {
		return false // folded, or a first line net/http refuses
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok || len(name) == 0 {
		return false
	}
	for _, b := range name {
		if !isTokenByte(b) {
			return false
		}
	}
	for _, b := range value {
		if b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	value = trimOWS(value)
	switch {
	case asciiEqualFold(name, "Content-Length"):
		if f.length || len(value) == 0 || len(value) > 18 {
			return false
		}
		f.length, h.length = true, 0
		for _, d := range value {
			if d < '0' || d > '9' {
				return false
			}
			h.length = h.length*10 + int64(d-'0')
		}
	case asciiEqualFold(name, "Transfer-Encoding"):
		if f.te || http10 || !asciiEqualFold(value, "chunked") {
			return false
		}
		f.te, h.chunked = true, true
	case asciiEqualFold(name, "Connection"):
		f.close = f.close || hasToken(value, "close")
		f.keepAlive = f.keepAlive || hasToken(value, "keep-alive")
	case asciiEqualFold(name, "Trailer"):
		f.badTrailer = f.badTrailer || hasToken(value, "Content-Length") || hasToken(value, "Transfer-Encoding") || hasToken(value, "Trailer")
	case asciiEqualFold(name, "Server-Timing") && !f.serverTiming:
		f.serverTiming = true // net/http takes the first
		h.serverTiming, _ = ParseServerTiming(string(value), "app")
	}
	return true
}

// cutCRLF cuts b at its first line end, which must be CRLF.
func cutCRLF(b []byte) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 1 || b[i-1] != '\r' {
		return nil, nil, false
	}
	return b[:i-1], b[i+1:], true
}

// isTokenByte reports a byte of an HTTP token (a field name).
func isTokenByte(b byte) bool {
	switch {
	case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", b) >= 0
}

// trimOWS trims spaces and tabs from both ends.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// hasToken reports whether the comma-separated list v has token, ignoring
// ASCII case (as net/http reads Connection).
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var elem []byte
		elem, v, _ = bytes.Cut(v, []byte(","))
		if asciiEqualFold(trimOWS(elem), token) {
			return true
		}
	}
	return false
}

// readNetHTTPHead parses the header with net/http, as its transport does.
func readNetHTTPHead(br *bufio.Reader, req *http.Request) (leanHead, error) {
	for {
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			return leanHead{}, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode <= 199 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue
		}
		h := leanHead{status: resp.StatusCode, length: resp.ContentLength, close: resp.Close || resp.StatusCode <= 199, resp: resp}
		if st := resp.Header.Get("Server-Timing"); st != "" {
			h.serverTiming, _ = ParseServerTiming(st, "app")
		}
		h.upgraded = resp.StatusCode == http.StatusSwitchingProtocols && resp.Header.Get("Upgrade") != "" &&
			hasTokenIn(resp.Header["Connection"], "upgrade")
		return h, nil
	}
}

func hasTokenIn(values []string, token string) bool {
	for _, v := range values {
		if hasToken([]byte(v), token) {
			return true
		}
	}
	return false
}

// errLeanTrailerEOF is net/http's error for a chunked body cut in its
// trailer (the same text, so the same class).
var errLeanTrailerEOF = errors.New("http: unexpected EOF reading trailer")

// readLeanTrailer reads a chunked body's trailer as net/http does,
// returning its Server-Timing app;dur.
func readLeanTrailer(br *bufio.Reader) (time.Duration, error) {
	buf, err := br.Peek(2)
	if bytes.Equal(buf, crlfcrlf[:2]) {
		br.Discard(2)
		return 0, nil
	}
	if len(buf) < 2 {
		return 0, errLeanTrailerEOF
	}
	if err != nil {
		return 0, err
	}
	if !upcomingDoubleCRLF(br) {
		return 0, errors.New("http: suspiciously long trailer after chunked body")
	}
	hdr, err := textproto.NewReader(br).ReadMIMEHeader()
	if err == io.EOF {
		err = errLeanTrailerEOF
	}
	if err != nil {
		return 0, err
	}
	var st time.Duration
	if v := hdr.Get("Server-Timing"); v != "" {
		st, _ = ParseServerTiming(v, "app")
	}
	return st, nil
}

// upcomingDoubleCRLF reports whether the buffer holds, or can be filled up
// to its size to hold, a blank line (net/http's bound on a trailer).
func upcomingDoubleCRLF(br *bufio.Reader) bool {
	for n := 4; ; n++ {
		buf, err := br.Peek(n)
		if bytes.HasSuffix(buf, crlfcrlf) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// asciiEqualFold reports whether b is s, ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
