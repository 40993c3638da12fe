package labtest

import (
	"github.com/slowlab/slowlab/lab/stack"
)

// App is one registered app server as the endpoint conformance tests
// start it: its stack (the app behind the embedded proxy, reached
// directly) and a one-worker server of its first model.
type App struct {
	Stack, Server string
}

// Apps lists every registered app server (stack.Apps), so a test that
// every app must pass runs on an app added later without being edited.
func Apps() []App {
	var out []App
	for _, a := range stack.Apps() {
		m := a.Models()[0]
		server := m.Name
		switch {
		case m.Threads:
			server += "-1x1"
		case m.Sized:
			server += "-1"
		}
		out = append(out, App{Stack: a.Name() + "+embedded", Server: server})
	}
	return out
}
