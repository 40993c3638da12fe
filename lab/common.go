package lab

// Common is the part of the scenario every experiment on a stack shares,
// embedded inline in its Config: which experiment, how many repetitions
// of each condition (checked by ValidateAll, not by the experiment), and
// the stack, its limits and component settings. It implements Head,
// Repetitions and Stack for the Config that embeds it.
type Common struct {
	Header    `yaml:",inline"`
	Reps      int `yaml:"reps"`
	StackSpec `yaml:",inline"`
}

// PublishedCommon is experiment's common part with reps repetitions on
// the stack auto chooses, under the published limits.
func PublishedCommon(experiment string, reps int) Common {
	return Common{Header: Header{Experiment: experiment}, Reps: reps, StackSpec: PublishedStackSpec()}
}

// Head implements Config.
func (c *Common) Head() *Header { return &c.Header }

// Repetitions implements Repeated.
func (c *Common) Repetitions() *int { return &c.Reps }

// Stack implements Stacked.
func (c *Common) Stack() *StackSpec { return &c.StackSpec }
