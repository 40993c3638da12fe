package loadgen

import (
	"bufio"
	"io"
	"net/http"

	"github.com/slowlab/slowlab/internal/bounded"
)

// headLimit is the connection of a client that reads its one response
// with net/http's ReadResponse (the slow reader, the SSE client, the slow
// uploader), which bounds nothing: the header may read at most
// MaxResponseHeaderBytes from the connection, counted as the fast clients
// count theirs (leanConn.headerLeft); then it reads through.
type headLimit struct{ bounded.Header }

// newHeadLimit reads r with a header bound of MaxResponseHeaderBytes.
func newHeadLimit(r io.Reader) *headLimit {
	return &headLimit{bounded.Header{R: r, Left: MaxResponseHeaderBytes, Err: ErrHeaderTooLarge}}
}

// readResponse reads the response to req from br, which reads through h,
// and lifts h's bound for the body. Whatever failed once the bound was
// reached, the error is ErrHeaderTooLarge, as in the fast clients.
func (h *headLimit) readResponse(br *bufio.Reader, req *http.Request) (*http.Response, error) {
	resp, err := http.ReadResponse(br, req)
	if err != nil && h.Reached() {
		err = ErrHeaderTooLarge
	}
	h.Lift()
	return resp, err
}
