//go:build race

package proxy

// raceEnabled skips timing assertions: the race detector slows the proxy
// more than the paced client.
const raceEnabled = true
