package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/assess"
	"github.com/slowlab/slowlab/recorder"
)

const combineSynopsis = `--combine --out DIR [--fail-on BOUNDS] SHARD_DIR...

Checks the results directories of the N shards of one sharded assessment (slowlab assess --shard
I/N --start-at TIME --out SHARD_DIR, every shard's directory given once) against each other and
writes shard 0's verdicts, each level judged over every shard, to DIR/assessment.json with its
report. Refused, naming what is wrong (exit 2): a shard missing or given twice, shards configured
differently (the settings that differ), clocks further apart than 250 ms, a shard that did not run
a level shard 0 ran. A level where a shard had fewer of its clients connected than its share, or
where the app (seen, on a direct route) held fewer connections than the level's clients, is short;
one a shard started late or found invalid is invalid. Exit status as slowlab assess: 0 passed, 1 a
--fail-on bound broken, 2 bad input, 3 a bound not judged or a probe without a verdict.`

// runAssessCombine runs `slowlab assess --combine`.
func runAssessCombine(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("assess", combineSynopsis, stdout)
	out := fs.String("out", "", "directory to write the combined verdicts to (required; created, and must hold no assessment yet)")
	failOn := fs.String("fail-on", "", "exit 1 when a probe's combined threshold is below a bound, as slowlab assess --fail-on")
	k := 0
	for k < len(args) && strings.HasPrefix(args[k], "-") {
		if a := strings.TrimLeft(args[k], "-"); (a == "out" || a == "fail-on") && k+1 < len(args) {
			k++
		}
		k++
	}
	if err := parseFlags(fs, args[:k]); err != nil {
		return err
	}
	dirs := args[k:]
	switch {
	case *out == "":
		return usagef("--combine: --out is required, e.g. --out results/assess-combined")
	case len(dirs) == 0:
		return usagef("--combine: no shard directories: give each shard's --out directory")
	}
	if err := parsedOnly(ctx); err != nil {
		return err // the shards' directories are data, read only by a run
	}
	res, err := assess.Combine(dirs, *failOn)
	if errors.Is(err, assess.ErrRefused) {
		return exitError{assessBadInput, err}
	} else if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(*out, assess.File)); err == nil {
		return usagef("--out %s: holds %s already: combine into a new directory", *out, assess.File)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	// The session's files of shard 0, for the report's environment.
	for _, name := range []string{lab.ScenarioFile, recorder.EnvironmentFile} {
		if b, err := os.ReadFile(filepath.Join(res.Dir, name)); err == nil {
			if err := os.WriteFile(filepath.Join(*out, name), b, 0o644); err != nil {
				return err
			}
		}
	}
	res.Dir = *out
	if err := assess.WriteAssessment(*out, res.Assessment); err != nil {
		return err
	}
	if err := recorder.WriteManifest(*out, "assess --combine", assess.Name); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "combined %d shards: %s\n\n", res.CombinedShards, *out)
	res.Print(stdout)
	lab.WriteReport(*out, stdout, stderr)
	return assessExit(res)
}
