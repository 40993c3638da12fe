// Package buffersweep is the buffer-sweep experiment (issue #19): where
// does "proxy buffering off" stop protecting a synchronous app? It sweeps
// response size x slow read rate x route (direct, buffering off, buffering
// on) and, optionally, the kernel's socket buffer limits (tcp_wmem and
// tcp_rmem maxima), and for each cell measures /fast's p95, the app's send
// time and the path's capacity: the most bytes a download had in flight
// between the app and the client, from the hop samples (package hops).
// Before each cell runs, the path model (package pathmodel) predicts the
// path's capacity C from configuration only (the namespace's socket
// buffer settings, the app's, proxy's and client's buffers) and from it
// the app's send time,
// max(0, size - C) / R at read rate R; sweep.csv has the prediction beside
// the measurement, and the model-error tests (modelerror_test.go) hold the
// measured capacity within pathmodel's error bounds of the prediction.
//
// Each size x rate cell is a slow-client run matrix (package slowclient)
// with its own results directory under the sweep's; sweep.csv (Cell) has
// one row per cell and route. Kernel buffer
// limits are set only inside a network namespace the sweep creates: for
// each setting it starts itself again (`slowlab run`) as a child in a new
// network namespace (CLONE_NEWNET), which sets tcp_wmem and tcp_rmem
// there (network sysctls are per namespace) and runs the whole stack and
// load inside it, so the host's settings are never changed. Without
// limits given, the cells run in the lab's own namespace, under the
// host's settings. --max-host-cpu reaches every cell's matrix (a
// namespace's child takes it as its own flag); --resume keeps the cells
// sweep.csv has complete (every run ok), drops the others' rows and runs
// them again, each resuming its own slow-client matrix (its ok runs kept).
//
// It owns its scenario schema, flags and grid, its results file (Cell
// rows in sweep.csv, each cell's measured columns read from the cell's
// own slow-client files, its predicted ones from pathmodel), its cells
// table, declared once for the CLI and the report, and its report section
// (Section): the kernel settings the cells ran under, a /fast p95 heatmap
// per kernel setting, the measured against the predicted send time, and
// where one download's bytes were over time, hop by hop. The runs are
// slowclient's, the hop samples package hops'.
package buffersweep
