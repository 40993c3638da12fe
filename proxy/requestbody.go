package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

// ClientBodyTempPrefix starts the name of every request-body temp file
// (client_body_temp_path), as TempFilePrefix does a response's.
const ClientBodyTempPrefix = "client-body-temp-"

// DefaultClientBodyTempDir is the directory under TempDir that holds
// request-body temp files when ClientBodyTempDir is empty: NGINX's own name
// for its client_body_temp_path.
const DefaultClientBodyTempDir = "client_body_temp"

// bodyTempDir is where request bodies spill: ClientBodyTempDir, else
// DefaultClientBodyTempDir under TempDir.
func (o Options) bodyTempDir() string {
	if o.ClientBodyTempDir != "" {
		return o.ClientBodyTempDir
	}
	return filepath.Join(o.TempDir, DefaultClientBodyTempDir)
}

// bufferedBody is a request body read whole before the upstream is
// contacted (proxy_request_buffering on): in memory when it fits
// ClientBodyBufferSize, else all of it in a temp file, created and
// unlinked at once, as NGINX does.
type bufferedBody struct {
	mem  []byte
	file *os.File
	size int64
	m    *metrics
}

// reader reads the body from its start.
func (b *bufferedBody) reader() io.Reader {
	if b.file != nil {
		return io.NewSectionReader(b.file, 0, b.size)
	}
	return bytes.NewReader(b.mem)
}

// close closes the temp file, if any.
func (b *bufferedBody) close() {
	if b.file != nil {
		b.file.Close()
		b.file = nil
		b.m.tempFilesOpen.Dec()
	}
}

// readRequestBody reads r's whole body. The first ClientBodyBufferSize
// bytes stay in memory; a body larger than that goes, all of it, to a
// temp file, written ClientBodyBufferSize at a time. Its error is the
// client's (the body ended early or could not be read) or the temp
// file's.
func (p *Proxy) readRequestBody(r *http.Request) (*bufferedBody, error) {
	b := &bufferedBody{m: p.m}
	buf := make([]byte, p.opts.ClientBodyBufferSize)
	fill := 0
	for {
		n, err := r.Body.Read(buf[fill:])
		fill += n
		b.size += int64(n)
		if fill == len(buf) && err != io.EOF {
			if werr := b.spill(p.opts.bodyTempDir(), buf[:fill]); werr != nil {
				b.close()
				return nil, werr
			}
			fill = 0
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			b.close()
			return nil, clientError{fmt.Errorf("read request body: %w", err)}
		}
	}
	if b.file == nil {
		b.mem = buf[:fill]
		return b, nil
	}
	if err := b.spill(p.opts.bodyTempDir(), buf[:fill]); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// spill appends data to the temp file, creating it first.
func (b *bufferedBody) spill(dir string, data []byte) error {
	if b.file == nil {
		// Made on first use, so that a TempDir without request bodies
		// stays empty.
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create request body temp dir: %w", err)
		}
		f, err := os.CreateTemp(dir, ClientBodyTempPrefix)
		if err != nil {
			return fmt.Errorf("create request body temp file: %w", err)
		}
		if err := os.Remove(f.Name()); err != nil {
			f.Close()
			return fmt.Errorf("unlink request body temp file: %w", err)
		}
		b.file = f
		b.m.tempFilesOpen.Inc()
	}
	if len(data) == 0 {
		return nil
	}
	if _, err := b.file.Write(data); err != nil {
		return fmt.Errorf("write request body temp file: %w", err)
	}
	b.m.bodySpooledBytes.Add(float64(len(data)))
	return nil
}

// bufferRequest reads r's body whole when request buffering is on and r
// has a body, or when the upstream is HTTP/1.0 and the body's length is
// unknown (NGINX does the same: it cannot send it chunked), and makes r
// send it from there with its Content-Length. The returned close releases
// the temp file. An error means the client went away (clientError) or the
// temp file failed.
func (p *Proxy) bufferRequest(r *http.Request) (func(), error) {
	buffer := p.opts.RequestBuffering || p.opts.UpstreamHTTP10 && r.ContentLength < 0
	if !buffer || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return func() {}, nil
	}
	b, err := p.readRequestBody(r)
	if err != nil {
		return func() {}, err
	}
	r.Body, r.ContentLength = io.NopCloser(b.reader()), b.size
	r.TransferEncoding = nil
	return b.close, nil
}

// isClientError reports an error of the client's side.
func isClientError(err error) bool {
	var ce clientError
	return errors.As(err, &ce)
}
