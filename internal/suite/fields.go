package suite

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// checkFields reads a suite file's YAML as a tree and reports the first key that no field of
// the suite's schema takes, with its line, its path (targets[0].local.datapth) and the nearest
// known name, which the JSON decoder behind yaml.UnmarshalStrict cannot say. A document that
// is not YAML is left to that decoder's own error.
func checkFields(data []byte) error {
	if err := checkText(data); err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode && root.Tag != "!!null" {
		return fmt.Errorf("line %d: expected the suite's fields (a mapping such as \"paths: [cross-node]\"), got %s", root.Line, nodeKind(root))
	}
	return walkFields(root, reflect.TypeOf(Suite{}), "")
}

// unmarshalerType is the interface of types that read their own value (Duration, Fraction):
// their YAML is a scalar, not fields.
var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

func walkFields(n *yaml.Node, t reflect.Type, path string) error {
	nullable := t.Kind() == reflect.Pointer
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return checkScalar(n, t, path, nullable)
	}
	switch {
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := walkFields(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			if err := walkFields(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := jsonFields(t)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i], n.Content[i+1]
			at := key.Value
			if path != "" {
				at = path + "." + key.Value
			}
			ft, ok := fields[key.Value]
			if !ok {
				return unknownField(key, at, fields)
			}
			if err := walkFields(value, ft, at); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkText reports the first character YAML does not take (a byte that is not UTF-8, a
// control character) by its line and byte offset, which the YAML decoder does not say.
func checkText(data []byte) error {
	line := 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return fmt.Errorf("line %d: byte %d: expected UTF-8 text, got byte 0x%02x", line, i, data[i])
		case !printable(r) && !(r == '\uFEFF' && i == 0):
			return fmt.Errorf("line %d: byte %d: expected text, got control character %U", line, i, r)
		case r == '\n':
			line++
		}
		i += size
	}
	return nil
}

// printable is YAML's set of characters a document may hold (YAML 1.2, 5.1).
func printable(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r' || r == 0x85:
		return true
	case r < 0x20 || r == 0x7F || r >= 0x80 && r < 0xA0 || r == '\uFEFF':
		return false
	case r >= 0xD800 && r < 0xE000 || r == 0xFFFE || r == 0xFFFF:
		return false
	}
	return true
}

// nodeKind names a YAML node's kind for an error.
func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	return fmt.Sprintf("%q", n.Value)
}

// checkScalar reads a scalar of a type that reads its own value (a duration, a fraction) as
// the decoder will, so that a value it refuses is reported at its line and path, which the
// type's own error ("expected a duration such as 5s") cannot say. A plain scalar is read as
// the decoder reads it (YAML 1.1: "no" is false); one with an explicit tag is left to it. The
// decoder gives a null to the type itself, unless the field is a pointer (nullable).
func checkScalar(n *yaml.Node, t reflect.Type, path string, nullable bool) error {
	if n.Kind != yaml.ScalarNode || n.Style&yaml.TaggedStyle != 0 {
		return nil
	}
	var b []byte
	var err error
	if n.Style == 0 {
		b, err = sigsyaml.YAMLToJSON([]byte(n.Value))
	} else {
		b, err = json.Marshal(n.Value)
	}
	if err != nil || nullable && string(bytes.TrimSpace(b)) == "null" {
		return nil
	}
	if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(bytes.TrimSpace(b)); err != nil {
		return fmt.Errorf("line %d: %s: %w", n.Line, path, err)
	}
	return nil
}

// jsonFields maps a struct's JSON names to their types, as encoding/json reads them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func unknownField(key *yaml.Node, at string, fields map[string]reflect.Type) error {
	msg := fmt.Sprintf("line %d: %s: unknown field %q", key.Line, at, key.Value)
	if near := nearest(key.Value, fields); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", near)
	}
	known := make([]string, 0, len(fields))
	for name := range fields {
		known = append(known, name)
	}
	slices.Sort(known)
	return fmt.Errorf("%s; known here: %s", msg, strings.Join(known, ", "))
}

// nearest returns the known name closest to s by edit distance, ignoring case, when it is
// close enough to be a typo (at most a third of the name's letters differ).
func nearest(s string, fields map[string]reflect.Type) string {
	best, bestD := "", len(s)/3+1
	for name := range fields {
		if d := editDistance(strings.ToLower(s), strings.ToLower(name)); d < bestD || d == bestD && best != "" && name < best {
			best, bestD = name, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance of two strings, by bytes: insertions,
// deletions, substitutions and swaps of two neighbours (the commonest typo) cost one each.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
