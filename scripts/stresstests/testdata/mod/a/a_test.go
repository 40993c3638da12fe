package a

import (
	"testing"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

func TestMarked(t *testing.T) {
	slowlabtest.Timing(t)
}

func TestNotMarked(t *testing.T) {}

func helper(t *testing.T) { slowlabtest.Timing(t) }

func TestMarkedInASubtest(t *testing.T) {
	t.Run("x", func(t *testing.T) { slowlabtest.Timing(t) })
}
