// Package report turns a results directory into figures and a report:
// DIR/figures/NAME.png and NAME.svg for every figure, and DIR/report.html,
// which references the figures by relative paths and loads nothing from
// the network (no scripts, fonts or styles from elsewhere), so the
// directory can be copied, archived or opened offline as it is.
//
// Each experiment's section is a Section defined in the experiment's own
// package, built with NewSection, NewPart, AddTable and the figures of
// Part (Drawing and its plot primitives);
// a Table is declared once and rendered both as HTML here and as text by
// the CLI (Table.WriteText). report keeps no list of them: the experiment's
// registration in lab carries its section (lab.RegisterSection adds one
// that is no experiment's), and Write draws, in the order
// it is given (lab.ReportSections, the registry's), the sections whose
// results are in the directory.
// Every results file, environment.json included, is read through
// recorder, which owns their formats: report has no reader of its own.
//
// report does not measure or aggregate anything new: statistics are the
// ones docs/experiments.md defines (nearest-rank percentiles within a run,
// medians over runs), recomputed with recorder's functions where a figure
// needs per-run detail, and every caption says which one is drawn.
package report
