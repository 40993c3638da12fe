package recorder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slowlab/slowlab/internal/schema"
)

// EnvironmentFile is the results file saying what the results were
// measured on, one session at a time.
const EnvironmentFile = "environment.json"

// EnvironmentVersion is the version of environment.json's format this
// slowlab writes (its schema_version; internal/schema says how it is
// read).
const EnvironmentVersion = "1.0"

// Environment is one session of environment.json: what one run of the lab
// measured on. An experiment that is interrupted and resumed has a session
// for each time the lab wrote into the results directory, oldest first.
type Environment struct {
	Experiment string    `json:"experiment"`
	Stack      string    `json:"stack"`
	StartedAt  time.Time `json:"started_at"`
	Kernel     string    `json:"kernel"`
	Arch       string    `json:"arch"`
	CPUs       int       `json:"cpus"`
	Go         string    `json:"go"`
	// SlowlabVersion is the version of the slowlab that ran the session
	// (internal/buildinfo); empty in files written before it was recorded.
	SlowlabVersion string `json:"slowlab_version,omitempty"`
	SlowlabSHA256  string `json:"slowlab_sha256"`
	CgroupVersion  string `json:"cgroup_version"`
	Limits         string `json:"limits"`
	// Swap is what the cgroups enforce about swap: "none" only where the
	// kernel accounts swap in cgroups (memory.memsw.* on v1,
	// memory.swap.max on v2), and the host's swap either way.
	Swap     string            `json:"swap"`
	Versions map[string]string `json:"versions"` // what the stack's components report: gunicorn, uvicorn, node, nginx, their Pythons and gevent, where installed
	// Net is the kernel's network buffer settings the session ran under;
	// nil in files written before slowlab recorded them, and when none of
	// them could be read.
	Net *NetSettings `json:"net,omitempty"`
}

// NetSettings is the kernel's network buffer settings of one network
// namespace, which decide how many bytes of a response the sockets between
// an app and a slow client hold. The sysctls are kept as the kernel gives
// them, whitespace collapsed to single spaces ("4096 16384 4194304"); a
// setting that could not be read is "" (LoMTU 0), not a default.
type NetSettings struct {
	// Namespace is the network namespace the settings were read in: "host"
	// for the one the lab process runs in (the host's, unless slowlab
	// itself runs in a container); a run that creates its own namespace
	// may name it instead.
	Namespace         string `json:"namespace"`
	TCPRmem           string `json:"tcp_rmem"`            // net.ipv4.tcp_rmem: "min default max" bytes
	TCPWmem           string `json:"tcp_wmem"`            // net.ipv4.tcp_wmem: "min default max" bytes
	TCPNotsentLowat   string `json:"tcp_notsent_lowat"`   // net.ipv4.tcp_notsent_lowat, bytes
	RmemMax           string `json:"rmem_max"`            // net.core.rmem_max, bytes
	WmemMax           string `json:"wmem_max"`            // net.core.wmem_max, bytes
	TCPModerateRcvbuf string `json:"tcp_moderate_rcvbuf"` // net.ipv4.tcp_moderate_rcvbuf: "1" on, "0" off
	LoMTU             int    `json:"lo_mtu"`              // the loopback interface's MTU, bytes
}

// TCPMem is a parsed net.ipv4.tcp_rmem or tcp_wmem: the minimum, default
// and maximum size in bytes of a TCP socket's receive or send buffer.
type TCPMem struct {
	Min, Default, Max int64
}

// TCPMem parses the setting key, "tcp_rmem" or "tcp_wmem", into its three
// sizes. The error names the key and the text it could not parse; a
// setting that was not recorded ("") is an error too. Each size must be a
// non-negative decimal integer; the order of the three is not checked,
// since the kernel does not enforce it either.
func (n NetSettings) TCPMem(key string) (TCPMem, error) {
	s, ok := map[string]string{"tcp_rmem": n.TCPRmem, "tcp_wmem": n.TCPWmem}[key]
	if !ok {
		return TCPMem{}, fmt.Errorf("net setting %q: want tcp_rmem or tcp_wmem", key)
	}
	f := strings.Fields(s)
	if len(f) == 0 {
		return TCPMem{}, fmt.Errorf("%s %q: not recorded", key, s)
	}
	if len(f) != 3 {
		return TCPMem{}, fmt.Errorf("%s %q: want three sizes \"min default max\", got %d fields", key, s, len(f))
	}
	var v [3]int64
	for i, name := range []string{"min", "default", "max"} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err == nil && n < 0 {
			err = errors.New("negative")
		}
		if err != nil {
			return TCPMem{}, fmt.Errorf("%s %q: %s %q: %w", key, s, name, f[i], numErr(errNotByteCount, err))
		}
		v[i] = n
	}
	return TCPMem{Min: v[0], Default: v[1], Max: v[2]}, nil
}

// errNotByteCount is why a tcp_rmem or tcp_wmem size does not parse.
var errNotByteCount = errors.New("want a byte count")

// environmentFile is the layout of environment.json.
type environmentFile struct {
	SchemaVersion string        `json:"schema_version"`
	Sessions      []Environment `json:"sessions"`
}

// AppendEnvironment adds the session s to dir/environment.json after the
// sessions already there, creating the file if needed. The file is
// replaced atomically, so an earlier session is never lost, even to a
// crash mid-write; a file that does not parse, or that a newer slowlab
// wrote (what it has that this one does not know would be lost), is an
// error and is left as it is.
func AppendEnvironment(dir string, s Environment) error {
	path := filepath.Join(dir, EnvironmentFile)
	sessions, version, err := readEnvironment(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("append session: %w", err)
	}
	if strict, _ := schema.Compare(path, version, EnvironmentVersion); !strict {
		return fmt.Errorf("append session: %s: schema %s is newer than this slowlab's %s: what it does not know would be lost; use a newer slowlab",
			path, version, EnvironmentVersion)
	}
	return replaceJSON(dir, EnvironmentFile, environmentFile{SchemaVersion: EnvironmentVersion, Sessions: append(sessions, s)})
}

// ReadEnvironment returns the sessions of dir/environment.json, oldest
// first. It also reads the layout written before environment.json kept
// every session, a single session object, so older results directories
// still report. A missing file is an error wrapping fs.ErrNotExist; any
// other error names the file, a newer major version (schema_version)
// included. Fields it does not know are ignored, as they always were:
// the file describes, it configures nothing (a newer minor version's
// are noted once).
func ReadEnvironment(dir string) ([]Environment, error) {
	sessions, _, err := readEnvironment(filepath.Join(dir, EnvironmentFile))
	return sessions, err
}

// readEnvironment is ReadEnvironment of the file at path, with the
// version it says.
func readEnvironment(path string) ([]Environment, string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("read environment: %w", err)
	}
	version, err := schema.Of(b)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	if _, err := schema.Check(path, version, EnvironmentVersion); err != nil {
		return nil, "", err
	}
	sessions, err := parseEnvironment(b)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", path, err)
	}
	return sessions, version, nil
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
