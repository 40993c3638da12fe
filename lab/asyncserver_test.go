package lab

import (
	"testing"

	"github.com/slowlab/slowlab/lab/stack"
)

func TestResolveServer(t *testing.T) {
	st, _, err := stack.Lookup(stack.NameEmbedded)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := ResolveServer(st, AsyncServer); !ok || s.Name() != "async" {
		t.Errorf("embedded async: %v %v", s, ok)
	}
	if s, ok := ResolveServer(st, "sync-2"); !ok || s.Name() != "sync-2" {
		t.Errorf("sync-2: %v %v", s, ok)
	}
	if _, ok := ResolveServer(stack.Stack{Name: "none"}, AsyncServer); ok {
		t.Error("a stack without apps resolved async")
	}
}
