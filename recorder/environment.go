package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// EnvironmentFile is the results file saying what the results were
// measured on, one session at a time.
const EnvironmentFile = "environment.json"

// Environment is one session of environment.json: what one run of the lab
// measured on. An experiment that is interrupted and resumed has a session
// for each time the lab wrote into the results directory, oldest first.
type Environment struct {
	Experiment    string    `json:"experiment"`
	Stack         string    `json:"stack"`
	StartedAt     time.Time `json:"started_at"`
	Kernel        string    `json:"kernel"`
	Arch          string    `json:"arch"`
	CPUs          int       `json:"cpus"`
	Go            string    `json:"go"`
	SlowlabSHA256 string    `json:"slowlab_sha256"`
	CgroupVersion string    `json:"cgroup_version"`
	Limits        string    `json:"limits"`
	// Swap is what the cgroups enforce about swap: "none" only where the
	// kernel accounts swap in cgroups (memory.memsw.* on v1,
	// memory.swap.max on v2), and the host's swap either way.
	Swap     string            `json:"swap"`
	Versions map[string]string `json:"versions"` // python3, gunicorn, nginx where installed
}

// environmentFile is the layout of environment.json.
type environmentFile struct {
	Sessions []Environment `json:"sessions"`
}

// AppendEnvironment adds the session s to dir/environment.json after the
// sessions already there, creating the file if needed. The file is
// replaced atomically, so an earlier session is never lost, even to a
// crash mid-write; a file that does not parse is an error and is left as
// it is.
func AppendEnvironment(dir string, s Environment) error {
	sessions, err := ReadEnvironment(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("append session: %w", err)
	}
	path := filepath.Join(dir, EnvironmentFile)
	b, err := json.MarshalIndent(environmentFile{Sessions: append(sessions, s)}, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = replaceFile(dir, EnvironmentFile, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadEnvironment returns the sessions of dir/environment.json, oldest
// first. It also reads the layout written before environment.json kept
// every session, a single session object, so older results directories
// still report. A missing file is an error wrapping fs.ErrNotExist; any
// other error names the file. Fields it does not know are ignored.
func ReadEnvironment(dir string) ([]Environment, error) {
	path := filepath.Join(dir, EnvironmentFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read environment: %w", err)
	}
	sessions, err := parseEnvironment(b)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return sessions, nil
}

// parseEnvironment parses environment.json in either layout.
func parseEnvironment(b []byte) ([]Environment, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	if top == nil {
		return nil, errors.New("want a JSON object, got null")
	}
	raw, ok := top["sessions"]
	if !ok {
		var s Environment
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return []Environment{s}, nil
	}
	var sessions []Environment
	if err := json.Unmarshal(raw, &sessions); err != nil {
		return nil, fmt.Errorf("sessions: %w", err)
	}
	if len(sessions) == 0 {
		return nil, errors.New("sessions: the list is empty")
	}
	return sessions, nil
}
