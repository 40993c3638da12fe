// Package child runs the processes slowlab starts and speaks the protocol
// between them and their parent: a child prints one "ready k=v ..." line
// on stdout once it serves, its other output goes to a log, and it is
// stopped as a whole process group on every path (Start, Process.Stop).
//
// The protocol is typed constants that both sides use: the subcommand and
// flag names the parent builds a child's command line from, and the keys of
// the ready line the child prints and the parent reads (protocol.go). The
// lab starts children (lab/stack); cmd/slowlab's subcommands are the
// children. Neither side spells a key or a flag name itself.
//
// It does not decide what to start or when: that is the lab's.
package child
