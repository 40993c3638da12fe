package stack

import (
	"maps"
	"testing"
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
