package lab

import (
	"flag"
	"io"
)

// Given is what the user gave explicitly besides the shared options: the
// fields of the scenario file `slowlab run` read, and the experiment's own
// flags on the command line (Args, as parsed into Flags).
type Given struct {
	Scenario []byte
	Flags    *flag.FlagSet
	Args     []string
}

// reapply applies the scenario's fields and then the experiment's own
// flags to cfg again. The flags are parsed from Args into a new flag set
// bound to cfg, so that each flag's Set runs once on this config (a flag
// whose first value replaces a list and the next ones add to it starts
// afresh); the other flags of Flags (the shared ones) are read and
// ignored.
func (g Given) reapply(cfg Config) error {
	if g.Scenario != nil {
		strict, err := scenarioStrict(g.Scenario)
		if err == nil {
			err = decodeScenario(g.Scenario, cfg, strict)
		}
		if err != nil {
			return err
		}
	}
	if g.Flags == nil {
		return nil
	}
	own := flag.NewFlagSet(g.Flags.Name(), flag.ContinueOnError)
	own.SetOutput(io.Discard)
	cfg.Flags(own)
	g.Flags.VisitAll(func(f *flag.Flag) {
		if own.Lookup(f.Name) == nil {
			b, ok := f.Value.(interface{ IsBoolFlag() bool })
			own.Var(ignoredFlag(ok && b.IsBoolFlag()), f.Name, "")
		}
	})
	return own.Parse(g.Args)
}

// check refuses flags given together that cfg (a FlagChecker) refuses.
func (g Given) check(cfg Config) error {
	fc, ok := cfg.(FlagChecker)
	if !ok || g.Flags == nil {
		return nil
	}
	set := map[string]bool{}
	g.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return fc.CheckFlags(func(name string) bool { return set[name] })
}

// ignoredFlag is a flag reapply reads and ignores; true for a boolean one.
type ignoredFlag bool

func (ignoredFlag) String() string     { return "" }
func (ignoredFlag) Set(string) error   { return nil }
func (b ignoredFlag) IsBoolFlag() bool { return bool(b) }
