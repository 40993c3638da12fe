package lab

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/slowlab/slowlab/internal/schema"
)

// ScenarioFile is the canonical scenario a results directory was run with:
// the experiment's every setting, the stack it ran on and the limits
// applied, as `slowlab run` reads it.
const ScenarioFile = "scenario.yaml"

// writeScenario writes the session's scenario into a new results directory.
func writeScenario(dir string, b []byte) error {
	path := filepath.Join(dir, ScenarioFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", ScenarioFile, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// CheckResume refuses to resume env.Out with other settings than it was
// run with: its scenario.yaml must equal the session's (env.Scenario, else
// cfg's), and the error names every field that differs.
func CheckResume(env *Env, cfg Config) error {
	if len(env.Scenario) == 0 {
		b, err := MarshalScenario(cfg)
		if err != nil {
			return err
		}
		env.Scenario = b
	}
	path := filepath.Join(env.Out, ScenarioFile)
	old, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume %s: it has no %s, so what it was run with is unknown: start a new results directory", env.Out, ScenarioFile)
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	diffs, err := scenarioDiff(ScenarioFile, old, env.Scenario)
	if err != nil {
		return fmt.Errorf("resume %s: %w", path, err)
	}
	if len(diffs) > 0 {
		return fmt.Errorf("resume %s: it was run with other settings: %s", env.Out, strings.Join(diffs, "; "))
	}
	return nil
}

// scenarioDiff lists the fields that differ between two scenarios, as
// "PATH: WAS -> NOW": was, the file name's, and now. Their schema_version
// is not a setting: was's must be one this slowlab reads (an older
// scenario.yaml has none; a newer minor version's fields this slowlab does
// not know are differences).
func scenarioDiff(name string, was, now []byte) ([]string, error) {
	var a, b any
	if err := yaml.Unmarshal(was, &a); err != nil {
		return nil, err
	}
	if err := yaml.Unmarshal(now, &b); err != nil {
		return nil, err
	}
	var head Header
	if err := yaml.Unmarshal(was, &head); err != nil {
		return nil, err
	}
	if _, err := schema.Check(name, head.SchemaVersion, ScenarioVersion); err != nil {
		return nil, err
	}
	for _, m := range []any{a, b} {
		if top, ok := m.(map[string]any); ok {
			delete(top, schema.Field)
		}
	}
	var diffs []string
	diffValues("", a, b, &diffs)
	return diffs, nil
}

func diffValues(path string, a, b any, diffs *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		var keys []string
		for k := range am {
			keys = append(keys, k)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			diffValues(join(path, k), am[k], bm[k], diffs)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			diffValues(fmt.Sprintf("%s[%d]", path, i), as[i], bs[i], diffs)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*diffs = append(*diffs, fmt.Sprintf("%s: %s -> %s", path, show(a), show(b)))
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// show formats a YAML value on one line.
func show(v any) string {
	if v == nil {
		return "(none)"
	}
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSpace(string(b))
	if strings.Contains(s, "\n") {
		return fmt.Sprintf("%v", v)
	}
	return s
}
