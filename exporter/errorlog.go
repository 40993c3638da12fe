package exporter

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slowlab/slowlab/child"
)

func init() {
	registerCollector("errorlog", "failed temp-file writes in the proxy error logs a group names (error_logs, --collector.errorlog.file)", true,
		func(env collectorEnv) (Collector, error) {
			c := &errorLogCollector{maxRead: errorLogMaxRead, files: map[errorLogKey]*errorLogFile{}}
			c.baseline(env.groups)
			return c, nil
		},
		func(fs *flag.FlagSet, o *Options) {
			fs.Var(errorLogFlag{&o.ErrorLogs}, string(child.ExporterErrorLog), "`GROUP=FILE`: a proxy error log of the group, read for failed temp-file writes (slowlab_proxy_temp_write_errors_total); repeatable; added to the group's error_logs")
		})
}

// errorLogFlag collects the GROUP=FILE values of ErrorLogFlag in order.
type errorLogFlag struct{ v *[]string }

func (f errorLogFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strings.Join(*f.v, ",")
}

func (f errorLogFlag) Set(v string) error {
	*f.v = append(*f.v, v)
	return nil
}

// addErrorLogs adds each GROUP=FILE of logs to its group of cfg.
func addErrorLogs(cfg *Config, logs []string) error {
	for _, v := range logs {
		name, file, ok := strings.Cut(v, "=")
		i := slices.IndexFunc(cfg.Groups, func(g Group) bool { return g.Name == name })
		if !ok || file == "" || i < 0 {
			return fmt.Errorf("--%s %q: want GROUP=FILE with GROUP a configured group", child.ExporterErrorLog, v)
		}
		cfg.Groups[i].ErrorLogs = append(slices.Clip(cfg.Groups[i].ErrorLogs), file)
	}
	return nil
}

var tempWriteErrors = newGroupDesc("slowlab_proxy_temp_write_errors_total",
	"Lines of the group's proxy error logs recording a failed write to a file under its temp dirs: NGINX's pwrite()/pwritev()/write()/writev() \"PATH\" failed (28: No space left on device) or has written only N of M, and the embedded proxy's same line; appended since the exporter started.")

// errorLogMaxRead bounds what one scrape reads of one log file; the rest
// is read by the next scrapes.
const errorLogMaxRead = 4 << 20

// errorLogChunk is the read buffer: a log line longer than it (NGINX's are
// at most 2 KiB, NGX_MAX_ERROR_STR) is skipped, not counted.
const errorLogChunk = 64 << 10

// errorLogKey is one log file of one group: two groups naming the same
// file each count it.
type errorLogKey struct{ group, path string }

// errorLogFile is how far a log file has been read.
type errorLogFile struct {
	dev, ino uint64
	offset   int64
	count    uint64 // lines counted over the exporter's lifetime, across rotations
	skipping bool   // in the middle of a line longer than errorLogChunk
}

// errorLogCollector counts failed temp writes in the proxy's error log,
// the only record of a temp filesystem that fills and is freed between
// two scrapes (the proxy cuts its responses and drops their temp files at
// once, so slowlab_proxy_temp_fs_avail_bytes rarely sees it full). It
// reads each file incrementally: from where the last scrape stopped, and
// from the start of a new file (another inode: rotated) or of one shorter
// than that (truncated). Lines appended to a rotated file after the last
// scrape and before the rotation are not seen.
type errorLogCollector struct {
	maxRead int64
	mu      sync.Mutex // concurrent scrapes share the offsets
	files   map[errorLogKey]*errorLogFile
}

var _ Collector = (*errorLogCollector)(nil)

// baseline starts each existing log at its end, so the counter counts
// what is logged while the exporter runs: after a restart of the exporter
// increase() must not see the log's whole history as new failures. A log
// that does not exist yet is read from its start when it appears.
func (c *errorLogCollector) baseline(groups []group) {
	for _, g := range groups {
		for _, p := range g.errorLogs {
			st, err := statFile(p)
			if err != nil {
				continue
			}
			c.files[errorLogKey{g.name, p}] = &errorLogFile{dev: uint64(st.Dev), ino: st.Ino, offset: st.Size}
		}
	}
}

func (c *errorLogCollector) Update(ctx context.Context, targets []Target, ch chan<- prometheus.Metric) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs partialErrors
	for _, t := range targets {
		if len(t.ErrorLogs) == 0 {
			continue
		}
		var total uint64
		for _, p := range t.ErrorLogs {
			if ctx.Err() != nil {
				return fmt.Errorf("errorlog: %w", ctx.Err())
			}
			k := errorLogKey{t.Group, p}
			f := c.files[k]
			if f == nil {
				f = &errorLogFile{}
				c.files[k] = f
			}
			if err := f.read(p, t.TempDirs, c.maxRead); err != nil {
				errs.add(fmt.Errorf("group %s: %w", t.Group, err))
			}
			total += f.count
		}
		ch <- t.metric(tempWriteErrors, prometheus.CounterValue, float64(total))
	}
	return errs.err()
}

func statFile(p string) (*syscall.Stat_t, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("stat %s: no inode", p)
	}
	return st, nil
}

// read counts the lines appended to the file at p since the last read, at
// most maxRead bytes of them; a line not yet ended by a newline is left
// for the next read. A missing file counts nothing and is no error.
func (f *errorLogFile) read(p string, tempDirs []string, maxRead int64) error {
	file, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error log: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return fmt.Errorf("error log: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fmt.Errorf("error log %s: not a regular file", p)
	}
	if uint64(st.Dev) != f.dev || st.Ino != f.ino || st.Size < f.offset {
		f.dev, f.ino, f.offset, f.skipping = uint64(st.Dev), st.Ino, 0, false
	}
	limit := min(st.Size-f.offset, maxRead)
	n, skipping, err := scanLines(io.NewSectionReader(file, f.offset, limit), f.skipping,
		func(line []byte) {
			if isTempWriteFailure(line, tempDirs) {
				f.count++
			}
		})
	if n == 0 && limit == maxRead && err == nil {
		// A whole bounded read without a newline: a line too long to count.
		n, skipping = limit, true
	}
	f.offset += n
	f.skipping = skipping
	if err != nil {
		return fmt.Errorf("error log %s: %w", p, err)
	}
	return nil
}

// scanLines calls fn with each newline-ended line of r (without the
// newline) and returns the bytes consumed: up to the last newline, or all
// of a chunk that holds no newline (a line too long to count, whose rest
// is skipped up to its newline: skipping). It holds one chunk at a time.
func scanLines(r io.Reader, skipping bool, fn func([]byte)) (consumed int64, _ bool, _ error) {
	buf := make([]byte, errorLogChunk)
	have := 0 // bytes of an unfinished line at the start of buf
	for {
		n, err := r.Read(buf[have:])
		data := buf[:have+n]
		start := 0
		for {
			i := bytes.IndexByte(data[start:], '\n')
			if i < 0 {
				break
			}
			if !skipping {
				fn(data[start : start+i])
			}
			skipping = false
			start += i + 1
		}
		consumed += int64(start)
		have = copy(buf, data[start:])
		if have == len(buf) {
			// A chunk with no newline: drop it and the rest of its line.
			consumed += int64(have)
			have, skipping = 0, true
		}
		if err == io.EOF {
			return consumed, skipping, nil
		}
		if err != nil {
			return consumed, skipping, err
		}
	}
}
