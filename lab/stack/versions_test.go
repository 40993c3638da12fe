package stack

import (
	"errors"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// versionedApp is an app that reports the versions it is given.
type versionedApp struct {
	embeddedApp
	name     string
	versions map[string]string
}

func (a versionedApp) Name() string                { return a.name }
func (a versionedApp) Versions() map[string]string { return a.versions }

// A stack's versions are its components' reports: a name two components
// report alike once, differently once per component, and nothing for an
// empty version or a component that reports none.
func TestStackVersions(t *testing.T) {
	st := Stack{Apps: []App{
		versionedApp{name: "a", versions: map[string]string{"python3": "Python 3.11.2", "a": "a 1", "gevent": ""}},
		versionedApp{name: "b", versions: map[string]string{"python3": "Python 3.11.7", "b": "b 2"}},
		versionedApp{name: "c", versions: map[string]string{"python3": "Python 3.11.2"}},
		embeddedApp{},
	}, Proxy: nginxProxy{}}
	got := st.Versions()
	delete(got, "nginx") // the installed one's, checked on the real stack
	want := map[string]string{"python3": "Python 3.11.2", "a": "a 1", "python3 (b)": "Python 3.11.7", "b": "b 2"}
	if !maps.Equal(got, want) {
		t.Errorf("versions %v, want %v", got, want)
	}
}

// TestInstalledProbesOnce: a probe runs once per key however many
// sessions (goroutines) ask, each getting its answer, failures included;
// another key probes again.
func TestInstalledProbesOnce(t *testing.T) {
	var runs atomic.Int32
	probe := func() result[string] {
		runs.Add(1)
		return result[string]{"v1", errors.New("not installed")}
	}
	key := t.Name() + strconv.Itoa(int(time.Now().UnixNano()))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := installed(key, probe); r.v != "v1" || r.err == nil || r.err.Error() != "not installed" {
				t.Errorf("installed: %q, %v", r.v, r.err)
			}
		}()
	}
	wg.Wait()
	if n := runs.Load(); n != 1 {
		t.Errorf("the probe ran %d times for one key, want 1", n)
	}
	installed(key+"/other", probe)
	if n := runs.Load(); n != 2 {
		t.Errorf("the probe ran %d times for two keys, want 2", n)
	}
	// A probe that finds it installed answers a nil error, every time.
	for range 2 {
		if err := installed(key+"/nil", func() error { return nil }); err != nil {
			t.Errorf("installed: %v, want nil", err)
		}
	}
}
