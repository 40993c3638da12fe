package tempcliff

import (
	"strings"
	"testing"
)

// TestValidate: the published matrix and --quick's validate; each bad
// input fails before anything starts, naming its field.
func TestValidate(t *testing.T) {
	if err := Published().Validate(); err != nil {
		t.Fatal(err)
	}
	q := Published()
	q.Reduce()
	if err := q.Validate(); err != nil || len(q.Conditions) != 3 {
		t.Fatalf("quick: %v, %d conditions", err, len(q.Conditions))
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"tmpfs below 1m", func(c *Config) { c.Conditions[0].TempTmpfs = 512 << 10 }, "conditions[0].temp_tmpfs 512k: allowed 0 (no tmpfs) or 1m to 1g"},
		{"tmpfs above 1g", func(c *Config) { c.Conditions[1].TempTmpfs = 2 << 30 }, "conditions[1].temp_tmpfs 2g: allowed 0 (no tmpfs) or 1m to 1g"},
		{"max temp below 64k", func(c *Config) { c.Conditions[0].MaxTempFileSize = 4 << 10 }, "conditions[0].max_temp_file_size 4k: allowed 0 (memory buffers only) or 64k to 1t"},
		{"negative max temp", func(c *Config) { c.Conditions[0].MaxTempFileSize = -1 }, "conditions[0].max_temp_file_size -1: allowed 0"},
		{"size 0", func(c *Config) { c.Conditions[2].Size = 0 }, "conditions[2].size 0: allowed 1 byte to 1g"},
		{"size above 1g", func(c *Config) { c.Conditions[0].Size = 2 << 30 }, "conditions[0].size 2g: allowed 1 byte to 1g"},
		{"no slow clients", func(c *Config) { c.Conditions[0].SlowClients = 0 }, "conditions[0].slow_clients 0: allowed 1 to 100"},
		{"bad server", func(c *Config) { c.Conditions[0].Server = "sync-0" }, "conditions[0]."},
		{"read rate", func(c *Config) { c.SlowReader.ReadRate = 10 }, "slow_reader.read_rate 10: allowed 1k to 1g bytes/s"},
		{"no conditions", func(c *Config) { c.Conditions = nil }, "conditions: none given"},
		{"fast rate", func(c *Config) { c.Fast.Rate = 0 }, "fast."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Published()
			tc.edit(c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
