package lab

import (
	"slices"

	"github.com/slowlab/slowlab/lab/stack"
)

// AsyncServer names, in a condition, the stack's event-loop server,
// whatever it is.
const AsyncServer = "async"

// ResolveServer parses a condition's server, AsyncServer as the stack's
// own async model: "async" itself where the stack runs it, else the first
// async model it has, with one worker.
func ResolveServer(st stack.Stack, name string) (stack.Server, bool) {
	if name != AsyncServer {
		s, err := stack.ParseServer(name)
		return s, err == nil
	}
	models := st.Models()
	if slices.Contains(models, AsyncServer) {
		s, err := stack.ParseServer(AsyncServer)
		return s, err == nil
	}
	for _, m := range models {
		if s, err := stack.ParseServer(m + "-1"); err == nil {
			if info, ok := s.ModelInfo(); ok && info.Async {
				return s, true
			}
		}
	}
	return stack.Server{}, false
}
