package stack

import (
	"fmt"
	"slices"
)

// AsyncServer names, in a condition, the stack's event-loop server,
// whatever it is.
const AsyncServer = "async"

// ResolveServer parses a condition's server, AsyncServer as the stack's
// own async model: "async" itself where the stack runs it, else the first
// async model it has, with one worker.
func ResolveServer(st Stack, name string) (Server, bool) {
	if name != AsyncServer {
		s, err := ParseServer(name)
		return s, err == nil
	}
	models := st.Models()
	if slices.Contains(models, AsyncServer) {
		s, err := ParseServer(AsyncServer)
		return s, err == nil
	}
	for _, m := range models {
		if s, err := ParseServer(m + "-1"); err == nil {
			if info, ok := s.ModelInfo(); ok && info.Async {
				return s, true
			}
		}
	}
	return Server{}, false
}

// RoutedCondition is what ExpandRuns needs of a condition: its route
// and the server it names (AsyncServer among them).
type RoutedCondition interface {
	RouteName() Route
	ServerName() string
}

// ExpandRuns expands conditions on st: each once per rep, reps outermost,
// its server resolved (ResolveServer: "async" becomes the stack's
// event-loop server); one whose server the stack does not have is left
// out, named once in skipped. spec makes a run of a condition, its server
// and its rep.
func ExpandRuns[C RoutedCondition, R any](st Stack, reps int, conds []C, spec func(c C, srv Server, rep int) R) (runs []R, skipped []string) {
	for rep := 1; rep <= reps; rep++ {
		for _, cond := range conds {
			srv, ok := ResolveServer(st, cond.ServerName())
			if !ok {
				if rep == 1 {
					skipped = append(skipped, fmt.Sprintf("%s %s: the %s stack has no event-loop server", cond.RouteName(), cond.ServerName(), st.Name))
				}
				continue
			}
			runs = append(runs, spec(cond, srv, rep))
		}
	}
	return runs, skipped
}
