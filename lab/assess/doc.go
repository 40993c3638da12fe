// Package assess answers the question users bring about their own stack:
// how many slow clients of each kind take it down, what held it, and what
// fixes it (`slowlab assess`).
//
// For each probe (slow readers, slow uploads, idle connections, slowloris,
// stalled readers, held streams) it measures /fast open loop alone (the
// baseline), then with 1, 2, 4, ... clients of the probe's kind up to
// MaxClients, and stops at the first level where /fast degrades: a /fast
// request fails, or /fast's p95 is over 10x the baseline and over the
// baseline + 500 ms. A managed stack (embedded or real) is started fresh
// for each probe, so one probe's damage does not reach the next; an
// external stack is the user's, measured as it is, with a recovery check
// before each level.
//
// What it owns: the probes, the levels and the degradation rule, the
// verdicts, assessment.json's format (WriteAssessment, ReadAssessment),
// the terminal table, --fail-on and its section of report.html (Section,
// with the level figure, which lab lists after the experiments' through
// lab.RegisterSection). What it leaves to others: the clients are
// loadgen's, the stacks lab/stack's, the instruments (exporter, resource
// samples) lab's, the rows of requests.csv and resource-samples.csv
// recorder's, the page and its drawing primitives report's.
package assess
