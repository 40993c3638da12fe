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
// makes, is each experiment's (its MayHold). After the runs, the same
// conditions' rows say what happened (Measured, PathHeld): a warning line
// at the session's end (Log) and a paragraph in the report (Note)
// for each whose downloads the path held.
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
// response they expect to hold the app (Warnings), and how the results
// directory dir's rows measured those conditions' downloads (none when
// its files cannot be read).
type MayHolder interface {
	MayHold(net *recorder.NetSettings) []string
	Measured(dir string) []Measured
}

// Measured is a condition's slow downloads as its ok runs measured them,
// named as its warning names it: their size and the medians of the app's
// time to write one (app_send_s) and the client's to read it
// (client_receive_s), over the complete downloads the app recorded.
type Measured struct {
	Name               string
	Size               int64
	AppSendS, ReceiveS recorder.Maybe
}

// Medians is the Measured of the downloads whose app_send_s and
// client_receive_s are app and receive.
func Medians(name string, size int64, app, receive []float64) Measured {
	return Measured{name, size, recorder.Some(recorder.Median(app)), recorder.Some(recorder.Median(receive))}
}

// PathHeld says the path, not the app, held m's downloads: the app
// finished writing in under a quarter of the time the client took to
// read. A client reading at a steady rate leaves the app writing until
// all but what the buffers between them hold is read, so app_send_s /
// client_receive_s is 1 - held/size: under a quarter, the path held over
// three quarters of each response. (Half would not do: temp-cliff's
// --quick 16m against 0 measured 0.50-0.64 on this host with its workers
// held, /fast p95 0.75 s; a path holding it all, 0.01-0.07.) False when
// either median is missing (no complete download).
func (m Measured) PathHeld() bool {
	return m.AppSendS.Valid && m.ReceiveS.Valid && m.AppSendS.Value < m.ReceiveS.Value/4
}

// HeldWarnings are the warnings of those of ms the path held, in order.
func HeldWarnings(ms []Measured) []string {
	var out []string
	for _, m := range ms {
		if m.PathHeld() {
			out = append(out, fmt.Sprintf("%s: the path held the %s downloads, not the app: median app_send_s %.3f s is under a quarter "+
				"of the median client_receive_s %.3f s, so the app was free while the client read and this condition's result says nothing "+
				"about the stack", m.Name, report.SizeText(m.Size), m.AppSendS.Value, m.ReceiveS.Value))
		}
	}
	return out
}

// Log writes cfg's warnings to env's progress, one line each: before the
// session's first run, those under the settings of the namespace it runs
// in (kernelnet.Session); after its runs (done), those of the conditions
// whose downloads in env.Out the path held (HeldWarnings).
func Log(env *lab.Env, cfg MayHolder, done bool) {
	var ws []string
	if done {
		ws = HeldWarnings(cfg.Measured(env.Out))
	} else {
		ws = cfg.MayHold(kernelnet.Session())
	}
	for _, w := range ws {
		env.Logf("warning: %s", w)
	}
}

// Note adds to p, the section of experiment for the results directory
// dir, the warnings of the scenario dir's scenario.yaml holds under the
// settings its environment.json records (RecordedNet): what they mean,
// then each; then, likewise, the conditions whose downloads in dir the
// path held (PathHeld). Nothing when the scenario is missing or another
// experiment's, or there is nothing to warn of.
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
	held := HeldWarnings(h.Measured(dir))
	if len(held) > 0 {
		p.Note("Measured: in %d condition(s) whose finding needs the app held, the app finished writing the slow downloads in under "+
			"a quarter of the time the client took to read them, so the path held them and a small or absent effect there is no finding "+
			"(docs/%s.md).", len(held), experiment)
	}
	for _, w := range held {
		p.Note("Warning: %s.", w)
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
