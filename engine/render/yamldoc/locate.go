package yamldoc

import "bytes"

// DocLine returns the line of src (a template's source) where document
// idx (1-based) starts, counting the literal "---" separators. When the
// template emits separators from actions, it falls back to line 1.
func DocLine(src []byte, idx int) int {
	if idx <= 1 {
		return 1
	}
	line, seen := 1, 0
	for _, l := range bytes.Split(src, []byte("\n")) {
		if IsSeparator(l) {
			seen++
			if seen == idx-1 {
				return line + 1
			}
		}
		line++
	}
	return 1
}

// FindLine returns the first line of src, at or after from and within
// the same document, that match accepts, or from when none does.
func FindLine(src []byte, from int, match func(line []byte) bool) int {
	lines := bytes.Split(src, []byte("\n"))
	for i := from - 1; i >= 0 && i < len(lines); i++ {
		if i > from-1 && IsSeparator(lines[i]) {
			break
		}
		if match(lines[i]) {
			return i + 1
		}
	}
	return from
}

// IsKeyLine reports whether line holds the mapping key key, alone or as
// the first key of a sequence item ("key:" or "- key:", but not
// "otherkey:").
func IsKeyLine(line []byte, key string) bool {
	line = bytes.TrimLeft(line, " ")
	line = bytes.TrimLeft(bytes.TrimPrefix(line, []byte("-")), " ")
	return bytes.HasPrefix(line, []byte(key+":"))
}
