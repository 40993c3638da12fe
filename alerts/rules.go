package alerts

import (
	"bytes"
	_ "embed"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// RulesFile is the name of the rules file in this directory.
const RulesFile = "slowlab.rules.yml"

// RulesYAML is the content of slowlab.rules.yml.
//
//go:embed slowlab.rules.yml
var RulesYAML []byte

// Group is a rule group as Prometheus reads it.
type Group struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval,omitempty"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording rule (Record set) or an alerting rule (Alert set).
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// Rules parses RulesYAML; a field Prometheus would not know is an error.
func Rules() ([]Group, error) {
	var f struct {
		Groups []Group `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(RulesYAML))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("parse %s: %w", RulesFile, err)
	}
	return f.Groups, nil
}

// Recorded returns the names of the recording rules.
func Recorded(groups []Group) []string {
	var names []string
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				names = append(names, r.Record)
			}
		}
	}
	return names
}
