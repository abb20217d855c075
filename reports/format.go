package reports

import (
	"bytes"
	"encoding/json"
	"strings"
)

// jsonIndent is the indentation of result.json.
const jsonIndent = "  "

// indentJSON appends the compact JSON value src to b, indented as
// json.MarshalIndent would except that an object or array holding only
// numbers, booleans and nulls stays on one line. A latency spectrum point
// or a sales series then takes one line instead of one per number, which
// keeps result.json short enough to read.
func indentJSON(b *bytes.Buffer, src []byte, depth int) error {
	if len(src) == 0 || (src[0] != '{' && src[0] != '[') {
		b.Write(src)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	open, err := dec.Token()
	if err != nil {
		return err
	}
	isObject := open == json.Delim('{')
	var (
		keys []string
		vals []json.RawMessage
		flat = true
	)
	for dec.More() {
		if isObject {
			tok, err := dec.Token()
			if err != nil {
				return err
			}
			key, err := json.Marshal(tok)
			if err != nil {
				return err
			}
			keys = append(keys, string(key))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if c := v[0]; c == '{' || c == '[' || c == '"' {
			flat = false
		}
		vals = append(vals, v)
	}
	closer := byte(']')
	if isObject {
		closer = '}'
	}

	b.WriteByte(src[0])
	inner := strings.Repeat(jsonIndent, depth+1)
	for i, v := range vals {
		switch {
		case i > 0 && flat:
			b.WriteString(", ")
		case i > 0:
			b.WriteString(",\n" + inner)
		case !flat:
			b.WriteString("\n" + inner)
		}
		if isObject {
			b.WriteString(keys[i] + ": ")
		}
		if err := indentJSON(b, v, depth+1); err != nil {
			return err
		}
	}
	if !flat {
		b.WriteString("\n" + strings.Repeat(jsonIndent, depth))
	}
	b.WriteByte(closer)
	return nil
}
