package lab

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/slowlab/slowlab/recorder"
)

// ErrUnmeasured is wrapped by a session's error when it completed with
// conditions left without a valid (ok) run: the table has no row, or a
// row of no runs, for each. `slowlab reproduce` and `slowlab run` exit
// with ExitUnmeasured then.
var ErrUnmeasured = errors.New("without a valid run")

// ExitUnmeasured is the exit status of a session that completed with
// conditions left without a valid run (ErrUnmeasured).
const ExitUnmeasured = 4

// unmeasured collects, over a session, the conditions its matrices left
// without a valid run, with the file that says why; copies of the
// session's Env (a buffer-sweep cell's) share it.
type unmeasured struct {
	mu      sync.Mutex
	entries []unmeasuredEntry
}

type unmeasuredEntry struct {
	where string
	conds []string
}

// NoteUnmeasured records conditions the session left without a valid
// run, where being the results file that says why. It does nothing in an
// Env that RunSession did not make (a test's).
func (e *Env) NoteUnmeasured(where string, conds ...string) {
	if e.unmeasured == nil || len(conds) == 0 {
		return
	}
	e.unmeasured.mu.Lock()
	defer e.unmeasured.mu.Unlock()
	e.unmeasured.entries = append(e.unmeasured.entries, unmeasuredEntry{where, conds})
}

// Unmeasured is nil when every condition of the session got a valid run,
// else an error (ErrUnmeasured) that names each condition without one and
// where the reasons are.
func (e *Env) Unmeasured() error {
	if e.unmeasured == nil {
		return nil
	}
	e.unmeasured.mu.Lock()
	defer e.unmeasured.mu.Unlock()
	n := 0
	var parts []string
	for _, u := range e.unmeasured.entries {
		n += len(u.conds)
		parts = append(parts, fmt.Sprintf("%s (the reasons are in %s)", strings.Join(u.conds, ", "), u.where))
	}
	if n == 0 {
		return nil
	}
	noun := "conditions"
	if n == 1 {
		noun = "condition"
	}
	return fmt.Errorf("%d %s %w: %s", n, noun, ErrUnmeasured, strings.Join(parts, "; "))
}

// repSuffix and trySuffix end a run id: the repetition (most experiments'
// ids have one; latency-gap's runs each a whole condition) and a retry.
var (
	repSuffix = regexp.MustCompile(`\.rep[0-9]+$`)
	trySuffix = regexp.MustCompile(`\.try[0-9]+$`)
)

// ConditionOf is the condition of run id: the id less its retry (.tryN)
// and repetition (.repN).
func ConditionOf(id string) string {
	return repSuffix.ReplaceAllString(trySuffix.ReplaceAllString(id, ""), "")
}

// unmeasuredOf names, in the specs' order, the conditions of specs with
// no ok run (any repetition, any try) among runs.
func unmeasuredOf[S Planned, R any](specs []S, runs []R, verdict func(*R) Verdict) []string {
	ok := map[string]bool{}
	for i := range runs {
		if v := verdict(&runs[i]); *v.Status == recorder.RunOK {
			ok[ConditionOf(*v.ID)] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range specs {
		c := ConditionOf(s.ID())
		if !ok[c] && !seen[c] {
			out = append(out, c)
		}
		seen[c] = true
	}
	return out
}
