package licensor

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A small strict JSON reader (DESIGN.md 16). encoding/json takes the last of duplicate keys,
// replaces invalid UTF-8 and lone surrogates silently and forgets key order; licences need all
// three refused or kept. Values: nil, bool, string, jsonNumber, []any, *jsonObject.

// jsonNumber is a number's literal text, so integer claims can insist on integer literals.
type jsonNumber string

type jsonMember struct {
	key   string
	value any
}

// jsonObject keeps its members in document order; keys are unique.
type jsonObject struct{ members []jsonMember }

func (o *jsonObject) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

var errJSON = errors.New("not strict JSON")

// maxJSONDepth bounds nesting, so a hostile answer cannot exhaust the stack.
const maxJSONDepth = 64

// parseJSON reads exactly one JSON value (surrounding whitespace allowed) and refuses duplicate
// keys, invalid UTF-8, lone surrogate escapes and trailing data.
func parseJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, errJSON
	}
	p := &jsonParser{text: string(data)}
	value, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.at < len(p.text) {
		return nil, errJSON
	}
	return value, nil
}

type jsonParser struct {
	text string
	at   int
}

func (p *jsonParser) space() {
	for p.at < len(p.text) {
		switch p.text[p.at] {
		case ' ', '\t', '\n', '\r':
			p.at++
		default:
			return
		}
	}
}

func (p *jsonParser) literal(word string, value any) (any, error) {
	if !strings.HasPrefix(p.text[p.at:], word) {
		return nil, errJSON
	}
	p.at += len(word)
	return value, nil
}

func (p *jsonParser) value(depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, errJSON
	}
	p.space()
	if p.at >= len(p.text) {
		return nil, errJSON
	}
	switch c := p.text[p.at]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == 't':
		return p.literal("true", true)
	case c == 'f':
		return p.literal("false", false)
	case c == 'n':
		return p.literal("null", nil)
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, errJSON
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	p.at++ // {
	object := &jsonObject{}
	seen := map[string]bool{}
	p.space()
	if p.at < len(p.text) && p.text[p.at] == '}' {
		p.at++
		return object, nil
	}
	for {
		p.space()
		if p.at >= len(p.text) || p.text[p.at] != '"' {
			return nil, errJSON
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, errJSON
		}
		seen[key] = true
		p.space()
		if p.at >= len(p.text) || p.text[p.at] != ':' {
			return nil, errJSON
		}
		p.at++
		value, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		object.members = append(object.members, jsonMember{key, value})
		p.space()
		if p.at >= len(p.text) {
			return nil, errJSON
		}
		switch p.text[p.at] {
		case ',':
			p.at++
		case '}':
			p.at++
			return object, nil
		default:
			return nil, errJSON
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	p.at++ // [
	list := []any{}
	p.space()
	if p.at < len(p.text) && p.text[p.at] == ']' {
		p.at++
		return list, nil
	}
	for {
		value, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		list = append(list, value)
		p.space()
		if p.at >= len(p.text) {
			return nil, errJSON
		}
		switch p.text[p.at] {
		case ',':
			p.at++
		case ']':
			p.at++
			return list, nil
		default:
			return nil, errJSON
		}
	}
}

func (p *jsonParser) number() (any, error) {
	start := p.at
	if p.text[p.at] == '-' {
		p.at++
	}
	digits := func() int {
		n := 0
		for p.at < len(p.text) && p.text[p.at] >= '0' && p.text[p.at] <= '9' {
			p.at++
			n++
		}
		return n
	}
	if p.at < len(p.text) && p.text[p.at] == '0' {
		p.at++
	} else if digits() == 0 {
		return nil, errJSON
	}
	if p.at < len(p.text) && p.text[p.at] == '.' {
		p.at++
		if digits() == 0 {
			return nil, errJSON
		}
	}
	if p.at < len(p.text) && (p.text[p.at] == 'e' || p.text[p.at] == 'E') {
		p.at++
		if p.at < len(p.text) && (p.text[p.at] == '+' || p.text[p.at] == '-') {
			p.at++
		}
		if digits() == 0 {
			return nil, errJSON
		}
	}
	return jsonNumber(p.text[start:p.at]), nil
}

func (p *jsonParser) string() (string, error) {
	p.at++ // opening quote
	var out strings.Builder
	for {
		if p.at >= len(p.text) {
			return "", errJSON
		}
		c := p.text[p.at]
		switch {
		case c == '"':
			p.at++
			return out.String(), nil
		case c < 0x20:
			return "", errJSON
		case c != '\\':
			out.WriteByte(c)
			p.at++
			continue
		}
		p.at++ // backslash
		if p.at >= len(p.text) {
			return "", errJSON
		}
		escape := p.text[p.at]
		p.at++
		switch escape {
		case '"', '\\', '/':
			out.WriteByte(escape)
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", errJSON
			}
			if utf16.IsSurrogate(r) {
				// Only a high surrogate followed by an escaped low one makes a character.
				if !strings.HasPrefix(p.text[p.at:], `\u`) {
					return "", errJSON
				}
				p.at += 2
				low, ok := p.hex4()
				if !ok {
					return "", errJSON
				}
				r = utf16.DecodeRune(r, low)
				if r == utf8.RuneError {
					return "", errJSON
				}
			}
			out.WriteRune(r)
		default:
			return "", errJSON
		}
	}
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.at+4 > len(p.text) {
		return 0, false
	}
	n, err := strconv.ParseUint(p.text[p.at:p.at+4], 16, 32)
	if err != nil {
		return 0, false
	}
	p.at += 4
	return rune(n), true
}

// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the service and the TypeScript SDK
// hold every integer claim to it.
const maxSafeInteger = 1<<53 - 1

// integer reads a JSON integer literal (no fraction, no exponent) within the safe range.
func (n jsonNumber) integer() (int64, bool) {
	if strings.ContainsAny(string(n), ".eE") {
		return 0, false
	}
	value, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || value > maxSafeInteger || value < -maxSafeInteger {
		return 0, false
	}
	return value, true
}

// quoteJSON writes a string as JSON.stringify does: only the quote, the backslash and control
// characters are escaped, so a payload re-serialised here matches the service's byte for byte.
func quoteJSON(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// writeJSON writes a parsed value back in the same compact form JSON.stringify gives.
func writeJSON(b *strings.Builder, value any) {
	switch v := value.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		quoteJSON(b, v)
	case jsonNumber:
		b.WriteString(string(v))
	case []any:
		b.WriteByte('[')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, item)
		}
		b.WriteByte(']')
	case *jsonObject:
		b.WriteByte('{')
		for i, m := range v.members {
			if i > 0 {
				b.WriteByte(',')
			}
			quoteJSON(b, m.key)
			b.WriteByte(':')
			writeJSON(b, m.value)
		}
		b.WriteByte('}')
	}
}
