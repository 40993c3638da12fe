package recorder

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// RunIDColumn is the column that names a row's run in every per-run
// results file.
const RunIDColumn = "run_id"

// KeepRuns rewrites the results file dir/name, atomically, with its header
// and only the rows whose run_id keep accepts: resuming a session drops
// what its incomplete runs wrote to each of its files, whatever their row
// type. A missing file is left missing; a file without a run_id column,
// or whose rows do not parse as CSV, is an error naming it, except for a
// killed session's cut last row (see Reader), which is dropped, noted.
func KeepRuns(dir, name string, keep func(runID string) bool) error {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("resume %s: %w", path, err)
	}
	defer f.Close()
	src := &tailReader{r: f}
	r := csv.NewReader(src)
	r.ReuseRecord = true
	header, err := r.Read()
	if err != nil {
		return fmt.Errorf("resume %s: header: %w", path, err)
	}
	header = slices.Clone(header)
	col := slices.Index(header, RunIDColumn)
	if col < 0 {
		return fmt.Errorf("resume %s: no %s column in %v", path, RunIDColumn, header)
	}
	err = ReplaceFile(dir, name, func(out io.Writer) error {
		w := csv.NewWriter(out)
		if err := w.Write(header); err != nil {
			return err
		}
		for {
			start := r.InputOffset()
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil && src.cutAtEnd(r) {
				noteCut(CutRow{File: path, Line: startLine(err), Offset: start, Err: err, Removed: true})
				break
			}
			if err != nil {
				return err
			}
			if !keep(rec[col]) {
				continue
			}
			if src.cutAtEnd(r) {
				// A last row without its newline that parses as CSV
				// stays so: AppendFile judges it by its row type.
				return writeUnterminated(w, out, rec)
			}
			if err := w.Write(rec); err != nil {
				return err
			}
		}
		w.Flush()
		return w.Error()
	})
	if err != nil {
		return fmt.Errorf("resume %s: %w", path, err)
	}
	return nil
}

// writeUnterminated flushes w to out, then writes rec to out as w would,
// less its final newline.
func writeUnterminated(w *csv.Writer, out io.Writer, rec []string) error {
	w.Flush()
	if err := w.Error(); err != nil {
		return err
	}
	var b bytes.Buffer
	lw := csv.NewWriter(&b)
	if err := lw.Write(rec); err != nil {
		return err
	}
	lw.Flush()
	_, err := out.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return err
}
