package main

// The experiments `slowlab reproduce` and `slowlab run` know: each package
// registers itself with lab; adding an experiment is one line here.
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
