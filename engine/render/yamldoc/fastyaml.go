package yamldoc

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// ErrUnsupported reports a document outside the YAML subset that
// DecodeFast reads. Decode then decodes it with yaml.v2.
var ErrUnsupported = errors.New("outside the YAML subset of the fast decoder")

// maxFastDepth bounds how deeply DecodeFast nests collections. Deeper
// documents are left to yaml.v2, which has its own limit.
const maxFastDepth = 200

// maxFastKey is the longest key DecodeFast reads, in bytes. libyaml refuses
// a simple key longer than 1024 characters; longer keys are left to it.
const maxFastKey = 1000

// DecodeFast decodes the YAML subset that templates produce, and gives the
// same values Decode's yaml.v2 path gives (FuzzFastDecodeMatchesYAMLv2
// checks this). The subset: block mappings and block sequences nested by
// indentation, including "- key: v" items and sequences at the indentation
// of their key; plain, single-quoted and double-quoted scalars on one line;
// the empty flow collections {} and []; comments and blank lines.
//
// Anything else, including every document that is not valid YAML, gives
// ErrUnsupported and no other error, so that yaml.v2 reports the error with
// its line number. Plain scalars are resolved only where the result is
// certain (null, YAML 1.1 booleans, decimal integers that fit int64, and
// strings that cannot be read as anything else); any other number-like
// scalar also gives ErrUnsupported.
//
// Strings in the result share the memory of one copy of doc.
func DecodeFast(doc []byte) (map[string]any, error) {
	if !subsetBytes(doc) {
		return nil, ErrUnsupported
	}
	lines, ok := splitLines(string(doc))
	if !ok {
		return nil, ErrUnsupported
	}
	if len(lines) == 0 {
		return nil, nil // only comments and blank lines, as yaml.v2 gives
	}
	if isSeqEntry(lines[0].text) {
		return nil, ErrUnsupported // not a mapping: yaml.v2 reports it
	}
	p := fastParser{lines: lines}
	m, err := p.mapping(lines[0].indent, 0)
	if err != nil {
		return nil, err
	}
	if p.i < len(p.lines) {
		return nil, ErrUnsupported // a line less indented than the first
	}
	return m, nil
}

// subsetBytes reports whether doc is valid UTF-8 made only of characters
// that YAML reads as themselves: no tabs, carriage returns or other control
// characters, no byte order marks, and no Unicode line breaks.
func subsetBytes(doc []byte) bool {
	for i := 0; i < len(doc); {
		c := doc[i]
		if c < utf8.RuneSelf {
			if c != '\n' && (c < 0x20 || c == 0x7f) {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(doc[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return false
		case r < 0xa0, r == 0x2028, r == 0x2029, r == 0xfeff, r > 0xfffd && r < 0x10000:
			return false
		}
		i += n
	}
	return true
}

// fline is one line of a document that holds content: its indentation in
// spaces, and its text after the indentation.
type fline struct {
	indent int
	text   string
}

// splitLines returns the lines of src that are neither blank nor only a
// comment. It refuses document markers (--- and ...) at the start of a
// line.
func splitLines(src string) ([]fline, bool) {
	lines := make([]fline, 0, strings.Count(src, "\n")+1)
	for len(src) > 0 {
		line := src
		if i := strings.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = ""
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		text := line[n:]
		if text == "" || text[0] == '#' {
			continue
		}
		if n == 0 && (strings.HasPrefix(text, "---") || strings.HasPrefix(text, "...")) {
			return nil, false
		}
		lines = append(lines, fline{indent: n, text: text})
	}
	return lines, true
}

// fastParser reads block collections from lines, one line at a time.
type fastParser struct {
	lines []fline
	i     int // the next line to read
}

// block reads the mapping or sequence whose first line is the next line,
// at indentation ind.
func (p *fastParser) block(ind, depth int) (any, error) {
	if depth > maxFastDepth {
		return nil, ErrUnsupported
	}
	if isSeqEntry(p.lines[p.i].text) {
		return p.sequence(ind, depth)
	}
	return p.mapping(ind, depth)
}

// mapping reads the entries of a block mapping at indentation ind.
func (p *fastParser) mapping(ind, depth int) (map[string]any, error) {
	m := make(map[string]any)
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent < ind {
			break
		}
		if l.indent > ind {
			return nil, ErrUnsupported
		}
		key, rest, found, err := splitKey(l.text)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, ErrUnsupported
		}
		if _, dup := m[key]; dup {
			return nil, ErrUnsupported
		}
		p.i++
		v, err := p.value(rest, ind, depth, true)
		if err != nil {
			return nil, err
		}
		m[key] = v
	}
	return m, nil
}

// sequence reads the items of a block sequence at indentation ind.
func (p *fastParser) sequence(ind, depth int) ([]any, error) {
	var s []any
	for p.i < len(p.lines) {
		l := p.lines[p.i]
		if l.indent != ind || !isSeqEntry(l.text) {
			if l.indent > ind {
				return nil, ErrUnsupported
			}
			break
		}
		content := strings.TrimLeft(l.text[1:], " ")
		col := ind + len(l.text) - len(content)
		v, err := p.item(content, col, ind, depth)
		if err != nil {
			return nil, err
		}
		s = append(s, v)
	}
	return s, nil
}

// item reads one sequence item at indentation ind, whose content after
// "- " starts at column col.
func (p *fastParser) item(content string, col, ind, depth int) (any, error) {
	if content == "" || content[0] == '#' {
		p.i++
		return p.value("", ind, depth, false)
	}
	if isSeqEntry(content) {
		p.lines[p.i] = fline{indent: col, text: content}
		return p.block(col, depth+1)
	}
	_, _, found, err := splitKey(content)
	if err != nil {
		return nil, err
	}
	if found {
		// "- key: v" starts a mapping at col, which the following
		// lines at that indentation continue.
		p.lines[p.i] = fline{indent: col, text: content}
		return p.block(col, depth+1)
	}
	p.i++
	v, empty, err := inlineValue(content)
	if err != nil || empty {
		return nil, ErrUnsupported
	}
	return v, nil
}

// value reads the value after "key:" or "-": rest when it holds one, else
// the block on the following lines. A mapping's value may be a sequence at
// the mapping's own indentation ind.
func (p *fastParser) value(rest string, ind, depth int, inMapping bool) (any, error) {
	v, empty, err := inlineValue(rest)
	if err != nil || !empty {
		return v, err
	}
	if p.i >= len(p.lines) {
		return nil, nil
	}
	next := p.lines[p.i]
	switch {
	case next.indent > ind:
		return p.block(next.indent, depth+1)
	case next.indent == ind && inMapping && isSeqEntry(next.text):
		if depth+1 > maxFastDepth {
			return nil, ErrUnsupported
		}
		return p.sequence(ind, depth+1)
	}
	return nil, nil
}

// isSeqEntry reports whether text starts a block sequence item.
func isSeqEntry(text string) bool {
	return text == "-" || strings.HasPrefix(text, "- ")
}

// splitKey splits a mapping entry "key: rest". found is false when text is
// no entry, only a scalar.
func splitKey(text string) (key, rest string, found bool, err error) {
	if text[0] == '"' || text[0] == '\'' {
		key, n, err := quoted(text)
		if err != nil {
			return "", "", false, err
		}
		after := text[n:]
		if after == "" || after[0] != ':' {
			return "", "", false, nil
		}
		if len(after) > 1 && after[1] != ' ' || n > maxFastKey || key == "<<" {
			return "", "", false, ErrUnsupported
		}
		return key, after[1:], true, nil
	}
	cut := cutComment(text)
	i := 0
	for ; i < len(cut); i++ {
		if cut[i] == ':' && (i+1 == len(cut) || cut[i+1] == ' ') {
			break
		}
	}
	if i == len(cut) {
		return "", "", false, nil
	}
	key = cut[:i]
	if key == "" || key[len(key)-1] == ' ' || len(key) > maxFastKey || isIndicator(key[0]) {
		return "", "", false, ErrUnsupported
	}
	if v, err := resolvePlain(key); err != nil || !isString(v) {
		return "", "", false, ErrUnsupported
	}
	return key, text[i+1:], true, nil
}

// isString reports whether v is a string.
func isString(v any) bool {
	_, ok := v.(string)
	return ok
}

// inlineValue reads the scalar or empty flow collection in rest, the text
// after "key:" or "- ". empty is true when rest holds only spaces or a
// comment: the value, if any, is on the following lines.
func inlineValue(rest string) (v any, empty bool, err error) {
	s := strings.TrimLeft(rest, " ")
	if s == "" || s[0] == '#' {
		return nil, true, nil
	}
	switch s[0] {
	case '"', '\'':
		q, n, err := quoted(s)
		if err != nil {
			return nil, false, err
		}
		if after := strings.TrimLeft(s[n:], " "); after != "" && (after[0] != '#' || len(after) == len(s[n:])) {
			return nil, false, ErrUnsupported
		}
		return q, false, nil
	case '{', '[':
		switch cutComment(s) {
		case "{}":
			return map[string]any{}, false, nil
		case "[]":
			return []any{}, false, nil
		}
		return nil, false, ErrUnsupported
	}
	plain := cutComment(s)
	if isIndicator(plain[0]) && !isDashScalar(plain) || plain[len(plain)-1] == ':' || strings.Contains(plain, ": ") {
		return nil, false, ErrUnsupported
	}
	v, err = resolvePlain(plain)
	return v, false, err
}

// isDashScalar reports whether s, which starts with '-', is a plain
// scalar ("-1", "-x") rather than a sequence item.
func isDashScalar(s string) bool {
	return s[0] == '-' && len(s) > 1 && s[1] != ' '
}

// cutComment drops a trailing " #" comment and the spaces before it.
func cutComment(s string) string {
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}

// isIndicator reports whether c, first in a plain scalar, would make it
// something else, or is refused at that position.
func isIndicator(c byte) bool {
	return strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", c) >= 0
}
