package chromium

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/slowlab/slowlab/internal/slowlabtest"
)

// TestCloseEndsChromium: once Close returns, Chromium's process group is
// gone and its profile removed; so too when its binary cannot start.
func TestCloseEndsChromium(t *testing.T) {
	bin := Binary()
	slowlabtest.Require(t, bin != "", "chromium is not installed (make test installs it)")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b, err := Start(ctx, bin, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.Connect(ctx)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	var v struct{ Product string }
	if err := c.Call("", "Browser.getVersion", map[string]any{}, &v); err != nil || v.Product == "" {
		t.Errorf("Browser.getVersion: %q %v", v.Product, err)
	}
	c.Close()
	pid, profile := b.PID(), b.profile
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("chromium's process group %d after Close: %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(profile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("profile %s after Close: %v, want it removed", profile, err)
	}

	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowlab-chromium-*"))
	if _, err := Start(ctx, filepath.Join(t.TempDir(), "no-chromium"), Options{}); err == nil {
		t.Fatal("started a binary that does not exist")
	}
	if after, _ := filepath.Glob(filepath.Join(os.TempDir(), "slowlab-chromium-*")); len(after) != len(before) {
		t.Errorf("a failed start left a profile: %d profiles before, %d after", len(before), len(after))
	}
}

// TestLastLines keeps the last n lines.
func TestLastLines(t *testing.T) {
	if got := LastLines("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("LastLines: %q, want %q", got, "b\nc")
	}
	if got := LastLines("a\n", 5); got != "a" {
		t.Errorf("LastLines: %q, want %q", got, "a")
	}
}
