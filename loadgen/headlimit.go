package loadgen

import (
	"bufio"
	"io"
	"net/http"
)

// headLimit is the connection of a client that reads its one response
// with net/http's ReadResponse (the slow reader, the SSE client, the slow
// uploader), which bounds nothing: while left is 0 or more it lets the
// header read at most left more bytes from the connection, counted as the
// fast clients count theirs (leanConn.headerLeft); then it reads through.
type headLimit struct {
	r    io.Reader
	left int64
}

// newHeadLimit reads r with a header bound of MaxResponseHeaderBytes.
func newHeadLimit(r io.Reader) *headLimit { return &headLimit{r: r, left: MaxResponseHeaderBytes} }

func (h *headLimit) Read(p []byte) (int, error) {
	if h.left < 0 {
		return h.r.Read(p)
	}
	if h.left == 0 {
		return 0, ErrHeaderTooLarge
	}
	if int64(len(p)) > h.left {
		p = p[:h.left]
	}
	n, err := h.r.Read(p)
	h.left -= int64(n)
	return n, err
}

// readResponse reads the response to req from br, which reads through h,
// and lifts h's bound for the body. Whatever failed once the bound was
// reached, the error is ErrHeaderTooLarge, as in the fast clients.
func (h *headLimit) readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	resp, err := http.ReadResponse(br, req)
	if err != nil && h.left == 0 {
		err = ErrHeaderTooLarge
	}
	h.left = -1
	return resp, err
}
