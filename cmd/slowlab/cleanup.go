package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/slowlab/slowlab/cgroup"
	"github.com/slowlab/slowlab/internal/workdir"
)

func init() {
	register(command{
		name:    "cleanup",
		summary: "remove the cgroups and work directories that killed slowlab sessions left behind",
		run:     runCleanup,
	})
}

// runCleanup removes the empty cgroups below slowlab/<pid> and the run
// work directories (workdir.Prefix + pid) of every session whose
// process is gone (SIGKILLed by the OOM killer or a CI timeout, so its own
// cleanup never ran). It never ends a process: a cgroup that still holds
// processes is listed and kept, and the command then exits 1.
func runCleanup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cleanup", "[--cgroup-root DIR] [--temp-dir DIR] [--dry-run]\n\n"+
		"Removes the cgroups slowlab sessions that no longer run left under "+cgroup.SessionsDir+"/PID in every\n"+
		"hierarchy, and their runs' work directories ("+workdir.Prefix+"PID-*) in the temp dir. A running\n"+
		"session's, and any process, are left alone. Exit 1 if a leftover could not be removed (a cgroup\n"+
		"that still holds processes: end them first).", stdout)
	root := fs.String("cgroup-root", cgroup.DefaultRoot, "`DIR` where the cgroup filesystems are mounted")
	tmp := fs.String("temp-dir", os.TempDir(), "`DIR` where runs make their work directories")
	dry := fs.Bool("dry-run", false, "list what would be removed, remove nothing")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if err := parsedOnly(ctx); err != nil {
		return err
	}
	if _, err := os.Stat(*root); err != nil {
		return fmt.Errorf("--cgroup-root: %w", err)
	}
	left, err := cgroup.CleanupDead(*root, cgroup.CleanupOptions{DryRun: *dry})
	if errors.Is(err, cgroup.ErrNoHierarchy) {
		// No cgroups here (a container without them): the work
		// directories are still a session's to clean.
		fmt.Fprintf(stdout, "cleanup: no cgroup hierarchy under %s\n", *root)
	} else if err != nil {
		return err
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	var kept []string
	n := 0
	for _, l := range left {
		switch {
		case len(l.Pids) > 0:
			kept = append(kept, fmt.Sprintf("%s (processes %v)", l.Dir, l.Pids))
		case l.Err != nil:
			kept = append(kept, fmt.Sprintf("%s (%v)", l.Dir, l.Err))
		default:
			n++
			fmt.Fprintf(stdout, "%s %s (session %d)\n", verb, l.Dir, l.Session)
		}
	}
	fmt.Fprintf(stdout, "cleanup: %s %d cgroups of sessions that are gone\n", verb, n)
	dirs, err := workdir.CleanupDead(*tmp, *dry)
	if err != nil {
		return err
	}
	n = 0
	for _, d := range dirs {
		if d.Err != nil {
			kept = append(kept, fmt.Sprintf("%s (%v)", d.Dir, d.Err))
			continue
		}
		n++
		fmt.Fprintf(stdout, "%s %s (session %d)\n", verb, d.Dir, d.Session)
	}
	fmt.Fprintf(stdout, "cleanup: %s %d work directories of sessions that are gone\n", verb, n)
	if len(kept) > 0 {
		return exitError{1, errors.New("kept: " + strings.Join(kept, "; "))}
	}
	return nil
}
