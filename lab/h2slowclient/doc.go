// Package h2slowclient is the home of the h2-slow-client experiment
// (`slowlab reproduce h2-slow-client`): slow readers over HTTP/2, slow by
// flow control rather than by their TCP window, through a proxy that
// speaks HTTP/1.1 to the app. It asks how many app workers the slow
// streams of one connection hold against as many connections, whether a
// slow stream delays /fast on its own connection, and how a stream
// stalled with its window closed ends against the proxy's send_timeout.
// It owns the scenario (Config), the runs (on lab.Plan) and the table;
// the HTTP/2 client is loadgen.H2Conn's, the routes lab/stack's
// (stack.H2Routes), the rows recorder's (H2Stream, H2Run).
package h2slowclient
