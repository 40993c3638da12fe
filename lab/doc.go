// Package lab runs experiments end to end and holds what they share:
//
//   - the experiment registry (Register, Experiments, Names, Lookup): each
//     experiment is a package that registers itself from its init, with
//     its name, order, shared flags and summary, its results files, its
//     smoke reduction and its report section (ReportSections, in the
//     registry's order, is what report.Write draws): lab/slowclient,
//     lab/longpoll, lab/latencygap, lab/buffersweep, lab/slowupload,
//     lab/idleconn, lab/stalledreader, lab/sse, lab/tempcliff,
//     lab/tempdisk, lab/websocket and lab/h2slowclient; RegisterSection
//     adds a report section of results that are no experiment's, which
//     ReportSections lists after the experiments';
//   - the scenario format (`slowlab run FILE`, --print-scenario: an
//     experiment's configuration is its schema; ParseScenario,
//     MarshalScenario, ValidateAll) and the shared parts of it (Common:
//     the header, reps and StackSpec every experiment on a stack embeds;
//     LimitSpec, FastSpec, SlowReaderSpec, Duration and Size), with the
//     rules every experiment shares checked once: reps (1 to MaxReps, or
//     an experiment's RepsLimit, by ValidateAll), slow readers (loadgen's
//     ranges, by SlowReaderSpec.Validate and SettingPath); and the shared
//     flag types (SizeFlag, DurationFlag, SizesFlag, NamesFlag);
//   - the session (Options, RunSession: results directory, stack, cgroups
//     and limits, the canonical scenario (its schema_version,
//     ScenarioVersion), CheckResume, environment.json through
//     RecordSession, manifest.json through WriteManifest);
//   - the run loop, Matrix: an experiment gives its runs, what one run
//     measures and where its run row keeps its verdict, and Matrix owns
//     the results files (RunFiles, UseRunFiles), --resume, the host CPU
//     guard's verdicts (--max-host-cpu, lab/hostguard) and its retries,
//     progress lines (Progress), interruption and AllFailed; Plan runs an
//     experiment's matrix on the RunFiles layout (validating its config and
//     filling its Result, which embeds MatrixResult: Dir, Runs, Skipped,
//     AllFailed, ReasonsFile); StartFresh gives a run a stack of its own (a
//     work dir, NewWorkDir, the stack, the instruments of lab/instrument,
//     all ended by Stop), Judge and Failed its verdict, FastSpec.Run its
//     /fast schedule; Pool keeps a started stack between runs that can
//     share it;
//   - the session's record: environment.json (RecordSession, Environment,
//     with the network settings lab/kernelnet reads) and manifest.json.
//
// What it leaves to others: the system under test is lab/stack's (app
// servers × proxies, each a registered component, with the "async" server
// of a condition, ExpandRuns, and held-count sampling); a run's
// instruments (the exporter, resource sampling, the Prometheus targets
// file, the load generator's cgroup) are lab/instrument's, and a load
// generator run as a child lab/loadchild's (ErrKilledForMemory); watching
// the host's CPU is lab/hostguard's; the kernel's network settings are
// lab/kernelnet's; run work directories are internal/workdir's; child
// processes and their protocol are package child's, cgroups are package
// cgroup's, the network path of latency-gap is lab/netem's; measuring is
// loadgen's, every results file is recorder's, figures are report's.
//
// Adding an experiment: a package lab/NAME with a Config (YAML-tagged
// scenario fields, Flags, Validate, Run, which hands its runs to Plan or
// Matrix) and a Result (Print; AllFailed from MatrixResult), registered with Register from its init;
// its results files, each a row type in recorder (one file each, with its
// round-trip and fuzz tests); its report section in report (one file); and
// one import line in lab/experiments. CONTRIBUTING.md lists the
// files, and those of app servers, proxies and exporter collectors.
package lab
