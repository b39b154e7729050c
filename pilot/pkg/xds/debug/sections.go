package debug

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Section is a part of /debug/configz the server does not compute: a
// view a config source keeps of its own (the Gateway API status), which
// the assembly registers (Options.Sections) so that the server need not
// know the source. Sections follow the server's own fields, in the order
// given, and share /debug/configz's access (debug admins).
type Section struct {
	// Name is the section's key in /debug/configz; it must not be one of
	// the server's own keys.
	Name string
	// Value returns the section now, rendered as JSON; a nil result
	// leaves the key out.
	Value func() any
}

// withSections renders v, a JSON object, with each section's value added
// under its name after v's own fields. The result is the JSON a struct
// with the sections as trailing fields would give.
func withSections(v any, sections []Section) (json.RawMessage, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(sections) == 0 {
		return b, nil
	}
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("sections need an object, not %.20s", b)
	}
	out := bytes.NewBuffer(b[:len(b)-1])
	empty := len(b) == 2
	for _, sec := range sections {
		val := sec.Value()
		if val == nil {
			continue
		}
		vb, err := json.Marshal(val)
		if err != nil {
			return nil, fmt.Errorf("section %s: %w", sec.Name, err)
		}
		name, _ := json.Marshal(sec.Name)
		if !empty {
			out.WriteByte(',')
		}
		empty = false
		out.Write(name)
		out.WriteByte(':')
		out.Write(vb)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}
