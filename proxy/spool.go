package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"syscall"
)

// relayBuffered reads the upstream in a goroutine of its own as fast as it
// delivers, into memory and then the temp file, while this goroutine feeds
// the client in order. The upstream is closed as soon as its body is read.
//
// A chunked body (or one with a Content-Length) is passed on read by read.
// A close-delimited one (an HTTP/1.0 upstream's stream) is held until a
// buffer fills or the body ends, and so is the header, which goes out
// with the first data: NGINX 1.22 does this (measured by the sse
// experiment: with proxy_http_version 1.0 and buffering on, a 3 s event
// stream reaches the client whole when it ends). NGINX's event pipe passes
// a partly filled buffer on only when it holds what the upstream framing
// asks for next (a whole chunk, the rest of the length); a close-delimited
// body asks for nothing until the connection closes. NGINX holds a partly
// filled buffer of a Content-Length body until the rest arrives too; this
// proxy does not (the lab's fixed-length bodies are never trickled).
func (p *Proxy) relayBuffered(ctx context.Context, w io.Writer, rc *http.ResponseController, up *upstream) error {
	hold := closeDelimited(up.resp)
	if !hold {
		if err := rc.Flush(); err != nil {
			return clientError{err}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := newSpool(p.opts, p.m, &up.flow)
	var wg sync.WaitGroup
	wg.Go(func() {
		err := s.fill(ctx, up.resp.Body, hold)
		if err == nil {
			p.finishUpstream(up)
		}
		s.finish(err)
	})
	err := s.drain(ctx, w, rc)
	cancel()
	up.close() // unblocks a read in progress when the client went away
	wg.Wait()
	s.close()
	return err
}

// segment is unsent response data, in memory (buf) or in the temp file.
type segment struct {
	buf []byte // nil for a temp file region
	off int64  // temp file offset
	n   int64
}

// spool holds one response between the upstream reader (fill) and the
// client writer (drain). Data flows through a FIFO of segments; memory
// buffers are moved to the temp file when the reader needs one and all are
// taken, oldest first, so the order never changes.
type spool struct {
	opts Options
	m    *metrics
	f    *flow // its counts change under mu with what they count

	mu        *sync.Mutex // the flow's, so Buffered sees whole steps
	queue     []segment
	free      [][]byte
	allocated int // buffers made so far, up to 1 + Buffers.Count
	done      bool
	readErr   error
	// tempErr is a failed temp file write or create: the response is cut
	// at once, whatever is still queued (NGINX finalizes the request with
	// an error and closes the client connection).
	tempErr   error
	file      *os.File
	fileSize  int64            // also the next write offset: the file is never reused
	fileChunk io.LimitedReader // the writer's, reused for every sendFile chunk

	readerWake chan struct{} // a buffer was freed
	writerWake chan struct{} // data arrived or the reader finished
}

func newSpool(o Options, m *metrics, f *flow) *spool {
	return &spool{
		opts:       o,
		m:          m,
		f:          f,
		mu:         &f.mu,
		readerWake: make(chan struct{}, 1),
		writerWake: make(chan struct{}, 1),
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// wait releases the lock until c is signalled or ctx is done. Signals are
// kept in c's buffer, so one sent between unlock and select is not lost.
func (s *spool) wait(ctx context.Context, c chan struct{}) error {
	s.mu.Unlock()
	defer s.mu.Lock()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// fill reads body until EOF, publishing every read as a segment, or with
// hold only a full buffer and, at the end, the last partly filled one.
// Held bytes count as in memory.
func (s *spool) fill(ctx context.Context, body io.Reader, hold bool) error {
	var buf []byte
	filled := 0
	for {
		if buf == nil {
			var err error
			if buf, err = s.buffer(ctx); err != nil {
				return err
			}
			filled = 0
		}
		n, err := body.Read(buf[filled:])
		filled += n
		s.mu.Lock()
		s.f.read += int64(n)
		s.f.memory += int64(n)
		switch {
		case filled > 0 && (!hold || filled == len(buf) || err != nil):
			s.queue = append(s.queue, segment{buf: buf[:filled], n: int64(filled)})
			wake(s.writerWake)
			buf = nil
		case filled == 0:
			s.free = append(s.free, buf)
			buf = nil
		}
		s.mu.Unlock()
		switch {
		case err == io.EOF:
			return nil
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			return fmt.Errorf("read upstream body: %w", err)
		}
	}
}

// finish records the reader's outcome for drain.
func (s *spool) finish(err error) {
	s.mu.Lock()
	s.done, s.readErr = true, err
	s.mu.Unlock()
	wake(s.writerWake)
}

// buffer returns an empty memory buffer for the reader: a free one, a new
// one while fewer than 1 + Buffers.Count exist, one freed by spooling queued
// data to the temp file, or, when the file is full or disabled, the next
// one the writer gives back (back-pressure on the upstream).
func (s *spool) buffer(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if n := len(s.free); n > 0 {
			b := s.free[n-1]
			s.free = s.free[:n-1]
			return b, nil
		}
		// Memory is one BufferSize buffer plus Buffers, as in NGINX,
		// which keeps the start of the body in the proxy_buffer_size
		// buffer: a response that fits never touches the disk.
		if s.allocated <= s.opts.Buffers.Count {
			size := s.opts.Buffers.Size
			if s.allocated == 0 {
				size = s.opts.BufferSize
			}
			s.allocated++
			return make([]byte, size), nil
		}
		spooled, err := s.spoolLocked()
		if err != nil {
			return nil, err
		}
		if !spooled {
			if err := s.wait(ctx, s.readerWake); err != nil {
				return nil, err
			}
		}
	}
}

// spoolLocked moves the oldest queued memory segments, up to
// TempFileWriteSize and without passing MaxTempFileSize, to the end of the
// temp file and frees their buffers. It reports whether it freed any.
//
// It writes with s.mu held: the writer only waits for it when it wants its
// next segment, and the write goes to the page cache.
func (s *spool) spoolLocked() (bool, error) {
	var batch []int
	var total int64
	for i, seg := range s.queue {
		if seg.buf == nil {
			continue
		}
		if total+seg.n > int64(s.opts.TempFileWriteSize) || s.fileSize+total+seg.n > s.opts.MaxTempFileSize {
			break
		}
		batch = append(batch, i)
		total += seg.n
	}
	if len(batch) == 0 {
		return false, nil
	}
	if s.file == nil {
		if err := s.createFile(); err != nil {
			s.tempErr = err
			wake(s.writerWake)
			return false, err
		}
	}
	for _, i := range batch {
		seg := s.queue[i]
		// WriteAt leaves the file offset to the writer, which sends
		// from the file with sendfile(2) at that offset.
		if n, err := s.file.WriteAt(seg.buf, s.fileSize); err != nil {
			logTempWrite(s.file.Name(), n, len(seg.buf), err)
			s.tempErr = fmt.Errorf("write temp file: %w", err)
			wake(s.writerWake)
			return false, s.tempErr
		}
		s.free = append(s.free, seg.buf[:cap(seg.buf)])
		s.queue[i] = segment{off: s.fileSize, n: seg.n}
		s.fileSize += seg.n
		s.f.memory -= seg.n
		s.f.tempFile += seg.n
		s.f.tempFileSize = s.fileSize
		s.m.spooledBytes.Add(float64(seg.n))
	}
	s.mergeFileSegments()
	return true, nil
}

// mergeFileSegments joins neighbouring file regions that are contiguous in
// the file, so the writer sends them with one sendfile loop.
func (s *spool) mergeFileSegments() {
	q := s.queue[:1]
	for _, seg := range s.queue[1:] {
		last := &q[len(q)-1]
		if seg.buf == nil && last.buf == nil && last.off+last.n == seg.off {
			last.n += seg.n
			continue
		}
		q = append(q, seg)
	}
	clear(s.queue[len(q):])
	s.queue = q
}

// logTempWrite logs a failed temp file write as NGINX does (at crit, the
// errno and its text), e.g. on a full temp disk:
//
//	[crit] pwrite() "/tmp/proxy-temp/proxy-temp-1" failed (28: no space left on device) while reading upstream, wrote 32768 of 65536 bytes
func logTempWrite(path string, wrote, of int, err error) {
	code := -1
	var errno syscall.Errno
	if errors.As(err, &errno) {
		code = int(errno)
		err = errno
	}
	log.Printf("[crit] pwrite() %q failed (%d: %v) while reading upstream, wrote %d of %d bytes", path, code, err, wrote, of)
}

// createFile opens the temp file and unlinks it at once, as NGINX does: it
// lives until closed and shows up only as "(deleted)" in /proc/PID/fd.
func (s *spool) createFile() error {
	f, err := os.CreateTemp(s.opts.TempDir, TempFilePrefix)
	if err != nil {
		log.Printf("[crit] open() temp file in %q failed while reading upstream: %v", s.opts.TempDir, err)
		return fmt.Errorf("create temp file: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return fmt.Errorf("unlink temp file: %w", err)
	}
	s.file = f
	s.m.tempFilesOpen.Inc()
	return nil
}

// close closes the temp file, if any. Both goroutines must have returned.
func (s *spool) close() {
	if s.file != nil {
		s.file.Close()
		s.file = nil
		s.m.tempFilesOpen.Dec()
	}
	s.queue, s.free = nil, nil
}
