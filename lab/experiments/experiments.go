// Package experiments links every experiment of the lab into a program:
// each experiment's package registers itself with lab when imported, and
// this package imports them all. `slowlab` and the lab's tests import it;
// adding an experiment is its folder under lab/ and one line here
// (TestEveryExperimentIsImported checks none is left out).
package experiments

import (
	_ "github.com/slowlab/slowlab/lab/buffersweep"
	_ "github.com/slowlab/slowlab/lab/h2slowclient"
	_ "github.com/slowlab/slowlab/lab/idleconn"
	_ "github.com/slowlab/slowlab/lab/latencygap"
	_ "github.com/slowlab/slowlab/lab/longpoll"
	_ "github.com/slowlab/slowlab/lab/slowclient"
	_ "github.com/slowlab/slowlab/lab/slowupload"
	_ "github.com/slowlab/slowlab/lab/sse"
	_ "github.com/slowlab/slowlab/lab/stalledreader"
	_ "github.com/slowlab/slowlab/lab/tempcliff"
	_ "github.com/slowlab/slowlab/lab/tempdisk"
	_ "github.com/slowlab/slowlab/lab/websocket"
)
