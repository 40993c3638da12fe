// Package websocket is the home of the websocket experiment: who holds a
// WebSocket's connection on each server model, directly and through the
// proxy, what the proxy's idle timeout does to a socket nobody uses, with
// and without pings, and what a consumer that reads slowly costs each
// server's memory. Its apps' /ws endpoints (appserver.ParseWSQuery) and
// the load generator's clients (loadgen.WSConsumer, loadgen.WSHolder) are
// tested here on every app, as the experiment will run them.
//
// The experiment itself (its scenario, runs and tables) is not written
// yet; this package holds, for now, the tests that every app serves /ws
// alike.
package websocket
