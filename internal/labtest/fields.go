package labtest

import (
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Field is one leaf of an experiment's configuration: an exported field
// that is not a struct of further fields (a number, a list, a map),
// named by its path in the scenario file.
type Field struct {
	YAML  []string // keys of its scenario path: client, stall
	Index []int    // its path for reflect.Value.FieldByIndex
}

// Name is the field's scenario path: client.stall.
func (f Field) Name() string { return strings.Join(f.YAML, ".") }

// Of is the field's value in cfg, a pointer to a configuration struct.
func (f Field) Of(cfg any) reflect.Value {
	return reflect.ValueOf(cfg).Elem().FieldByIndex(f.Index)
}

// Fields lists the leaves of cfg, a pointer to a configuration struct,
// walking its exported fields (inline ones without a key of their own).
func Fields(cfg any) []Field {
	return fields(reflect.TypeOf(cfg).Elem(), nil, nil)
}

var marshaler = reflect.TypeOf((*yaml.Marshaler)(nil)).Elem()

func fields(t reflect.Type, yamlPath []string, index []int) []Field {
	var out []Field
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if !sf.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(sf.Name)
		}
		idx := append(append([]int(nil), index...), i)
		path := append(append([]string(nil), yamlPath...), name)
		if strings.Contains(opts, "inline") {
			path = yamlPath
		}
		if sf.Type.Kind() == reflect.Struct && !sf.Type.Implements(marshaler) && !reflect.PointerTo(sf.Type).Implements(marshaler) {
			out = append(out, fields(sf.Type, path, idx)...)
			continue
		}
		out = append(out, Field{YAML: path, Index: idx})
	}
	return out
}

// Changed lists the fields whose values differ between a and b, two
// pointers to configurations of one type.
func Changed(a, b any) []Field {
	var out []Field
	for _, f := range Fields(a) {
		if !reflect.DeepEqual(f.Of(a).Interface(), f.Of(b).Interface()) {
			out = append(out, f)
		}
	}
	return out
}
