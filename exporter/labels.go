package exporter

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// groupDesc is a metric the collectors report per group: its name, help
// and the variable labels that follow "group". A dynamic group
// (cgroup-re:) adds its captures as constant labels, so its Desc is made
// for the group (Target.metric) from the same name and help.
type groupDesc struct {
	name, help string
	labels     []string
	plain      *prometheus.Desc // for a group without captures
}

func newGroupDesc(name, help string, labels ...string) *groupDesc {
	return &groupDesc{name: name, help: help, labels: labels,
		plain: prometheus.NewDesc(name, help, append([]string{"group"}, labels...), nil)}
}

// metric is d's metric with value v for t: labels group, then values for
// d's other labels, then t's captures.
func (t Target) metric(d *groupDesc, typ prometheus.ValueType, v float64, values ...string) prometheus.Metric {
	desc := d.plain
	if len(t.Labels) > 0 && t.descs != nil {
		desc = t.descs.get(d, t.Labels)
	}
	return prometheus.MustNewConstMetric(desc, typ, v, append([]string{t.Group}, values...)...)
}

// descCache holds a dynamic group's Descs for one scrape; the collectors
// run at once, hence the lock.
type descCache struct {
	mu sync.Mutex
	m  map[*groupDesc]*prometheus.Desc
}

func (c *descCache) get(d *groupDesc, labels prometheus.Labels) *prometheus.Desc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if desc, ok := c.m[d]; ok {
		return desc
	}
	if c.m == nil {
		c.m = map[*groupDesc]*prometheus.Desc{}
	}
	desc := prometheus.NewDesc(d.name, d.help, append([]string{"group"}, d.labels...), labels)
	c.m[d] = desc
	return desc
}
