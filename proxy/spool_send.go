package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// next takes the segments to send next: one temp file region, or memory
// segments whose buffers add up to at most BusyBuffersSize (at least one).
// It returns io.EOF after the last one, or the reader's error once
// everything read before it was sent.
func (s *spool) next(ctx context.Context) ([]segment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 || s.tempErr != nil {
		if s.tempErr != nil {
			return nil, s.tempErr
		}
		if s.done {
			if s.readErr != nil {
				return nil, s.readErr
			}
			return nil, io.EOF
		}
		if err := s.wait(ctx, s.writerWake); err != nil {
			return nil, err
		}
	}
	k := 1
	if s.queue[0].buf != nil {
		busy := cap(s.queue[0].buf)
		for k < len(s.queue) && s.queue[k].buf != nil && busy+cap(s.queue[k].buf) <= s.opts.BusyBuffersSize {
			busy += cap(s.queue[k].buf)
			k++
		}
	}
	segs := make([]segment, k)
	copy(segs, s.queue)
	clear(s.queue[:k])
	s.queue = s.queue[k:]
	return segs, nil
}

// release gives memory buffers back to the reader; sent is how many of
// their bytes reached the client's socket (all, or 0 after a failed write).
func (s *spool) release(segs []segment, sent int64) {
	s.mu.Lock()
	s.f.memory -= sent
	s.f.written += sent
	for _, seg := range segs {
		s.free = append(s.free, seg.buf[:cap(seg.buf)])
	}
	s.mu.Unlock()
	wake(s.readerWake)
}

// drain writes the spooled data to the client in order until the reader
// is done and everything is sent.
func (s *spool) drain(ctx context.Context, w io.Writer, rc *http.ResponseController) error {
	for {
		segs, err := s.next(ctx)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if segs[0].buf == nil {
			if err := s.sendFile(w, rc, segs[0]); err != nil {
				return err
			}
			continue
		}
		var sent int64
		for _, seg := range segs {
			if _, err = w.Write(seg.buf); err != nil {
				break
			}
			sent += seg.n
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			sent = 0 // how much reached the socket is unknown; gone soon
		}
		s.release(segs, sent)
		if err != nil {
			return clientError{err}
		}
	}
}

// sendFile sends one temp file region, BusyBuffersSize at a time so that
// Buffered sees the region shrink as the client takes it (each chunk is
// counted once flushed to the client's socket). The writer owns the file
// offset; net/http hands an *io.LimitedReader of an *os.File to
// sendfile(2), which advances the offset.
func (s *spool) sendFile(w io.Writer, rc *http.ResponseController, seg segment) error {
	if _, err := s.file.Seek(seg.off, io.SeekStart); err != nil {
		return fmt.Errorf("seek temp file: %w", err)
	}
	lr := &s.fileChunk
	for left := seg.n; left > 0; {
		chunk := min(left, int64(s.opts.BusyBuffersSize))
		lr.R, lr.N = s.file, chunk
		n, err := io.Copy(w, lr)
		if err != nil {
			return clientError{err}
		}
		if n < chunk {
			return fmt.Errorf("temp file: read %d of %d bytes: %w", seg.n-left+n, seg.n, io.ErrUnexpectedEOF)
		}
		// Without sendfile (a chunked response) the end of a chunk
		// may still sit in net/http's buffer.
		if err := rc.Flush(); err != nil {
			return clientError{err}
		}
		s.mu.Lock()
		s.f.tempFile -= chunk
		s.f.written += chunk
		s.mu.Unlock()
		left -= chunk
	}
	return nil
}
