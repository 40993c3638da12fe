// Package holds owns the warning the experiments whose finding needs the
// app held by a slow download (slow-client, temp-cliff, stalled-reader)
// give where the path between the app and the client may hold the whole
// response, so that a run could show no held worker because of the path
// rather than the stack: the warnings of a matrix's conditions
// (Warnings, from pathmodel's judgement), their lines at the start of a
// session (Log, under the settings of the namespace it runs in) and their
// paragraphs in an experiment's report section (Note, from the results
// directory's scenario.yaml and the settings its environment.json
// records). Which conditions expect the app held, and what download each
// makes, is each experiment's (its MayHold).
package holds

import (
	"fmt"
	"path/filepath"

	"github.com/slowlab/slowlab/lab"
	"github.com/slowlab/slowlab/lab/kernelnet"
	"github.com/slowlab/slowlab/lab/pathmodel"
	"github.com/slowlab/slowlab/recorder"
	"github.com/slowlab/slowlab/report"
)

// Condition is one condition's slow download, named as its warning names
// it.
type Condition struct {
	Name     string
	Download pathmodel.Download
}

// Warnings are pathmodel's warnings for the conditions whose path may
// hold their whole response under net, in order; none where the model
// has no prediction or net lacks what it needs.
func Warnings(net *recorder.NetSettings, conds []Condition) []string {
	var out []string
	for _, c := range conds {
		if j, _ := pathmodel.JudgeDownload(net, c.Download); j != nil && j.MayHold() {
			out = append(out, j.Warning(c.Name))
		}
	}
	return out
}

// MayHolder is an experiment's configuration that says, under a
// namespace's settings, which of its conditions' paths may hold the whole
// response they expect to hold the app (Warnings).
type MayHolder interface {
	MayHold(net *recorder.NetSettings) []string
}

// Log writes cfg's warnings under the settings of the namespace the
// session runs in (kernelnet.Session) to env's progress, one line each,
// before the session's first run.
func Log(env *lab.Env, cfg MayHolder) {
	for _, w := range cfg.MayHold(kernelnet.Session()) {
		env.Logf("warning: %s", w)
	}
}

// Note adds to p, the section of experiment for the results directory
// dir, the warnings of the scenario dir's scenario.yaml holds under the
// settings its environment.json records (RecordedNet): what they mean,
// then each. Nothing when either is missing, the scenario is another
// experiment's, or it has no warnings.
func Note(p *report.Part, dir, experiment string) {
	cfg, err := lab.LoadScenario(filepath.Join(dir, lab.ScenarioFile), nil)
	if err != nil || cfg.Head().Experiment != experiment {
		return
	}
	h, ok := cfg.(MayHolder)
	if !ok {
		return
	}
	net := RecordedNet(dir)
	for _, n := range Notes(experiment, h.MayHold(net), net) {
		p.Note("%s", n)
	}
}

// RecordedNet is the socket buffer settings the results directory dir's
// environment.json records for its last session that has them; nil when
// none has (or the file cannot be read), so that a report of old results
// says nothing rather than guess.
func RecordedNet(dir string) *recorder.NetSettings {
	sessions, err := recorder.ReadEnvironment(dir)
	if err != nil {
		return nil
	}
	for i := len(sessions) - 1; i >= 0; i-- {
		if sessions[i].Net != nil {
			return sessions[i].Net
		}
	}
	return nil
}

// Notes are the report's paragraphs for experiment's warnings under
// net: what they mean (its docs page says more), then each; none without
// warnings.
func Notes(experiment string, warnings []string, net *recorder.NetSettings) []string {
	if len(warnings) == 0 || net == nil {
		return nil
	}
	notes := []string{fmt.Sprintf("The path model, from the scenario and the socket buffer settings environment.json records "+
		"(namespace %s: tcp_wmem %s, tcp_rmem %s), says the path may hold the whole response of %d condition(s) whose "+
		"finding needs the app held: their runs may show no held worker because of the path, not because the stack is fine "+
		"(docs/%s.md).", net.Namespace, net.TCPWmem, net.TCPRmem, len(warnings), experiment)}
	for _, w := range warnings {
		notes = append(notes, "Warning: "+w+".")
	}
	return notes
}
