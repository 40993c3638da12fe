// Package websocket is the home of the websocket experiment (`slowlab
// reproduce websocket`): who holds a WebSocket's connection on each
// server model, directly and through the proxy, what the proxy's idle
// timeout does to a socket nobody uses, with and without pings, and what
// a consumer that reads slowly costs each server's memory, with and
// without its backpressure. The apps' /ws endpoints
// (appserver.ParseWSQuery) and the load generator's clients
// (loadgen.WSConsumer, loadgen.WSHolder) are their packages', tested here
// on every app as the experiment runs them.
package websocket
