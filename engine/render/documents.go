package render

import (
	"bytes"
)

// renderedDoc is one decoded, validated document of a file's output.
type renderedDoc struct {
	obj  map[string]any
	doc  int // 1-based document index
	line int // best-known source line of the document
	end  int // offset in the file's output where the document ends
}

// decodeFile splits a file's output into documents and decodes each one,
// through the cache when the exact bytes were seen before.
func (s *Set) decodeFile(file string, out []byte) ([]renderedDoc, error) {
	cache := s.cacheFor(file)
	var docs []renderedDoc
	for i, d := range splitDocuments(out) {
		idx := i + 1
		end := d.start + len(d.text)
		if bytes.Contains(d.text, noValue) {
			d.text = bytes.ReplaceAll(d.text, noValue, nil)
		}
		if isBlank(d.text) {
			continue
		}
		if c := cache.get(d.text); c != nil {
			docs = append(docs, renderedDoc{obj: deepCopyMap(c.obj), doc: idx, line: s.docLine(file, idx), end: end})
			continue
		}
		obj, err := decodeYAML(d.text)
		if err != nil {
			return nil, s.yamlError(file, idx, d.text, err)
		}
		if obj == nil { // only comments
			continue
		}
		if err := validate(obj); err != nil {
			return nil, s.validationError(file, idx, obj, err)
		}
		cache.put(d.text, &decoded{obj: obj})
		docs = append(docs, renderedDoc{obj: deepCopyMap(obj), doc: idx, line: s.docLine(file, idx), end: end})
	}
	return docs, nil
}

// document is one YAML document of rendered output.
type document struct {
	text  []byte
	start int // offset of text in the file's output
}

// splitDocuments splits output at YAML document separators: lines that
// start with "---" and whitespace, or are just "---".
func splitDocuments(out []byte) []document {
	var docs []document
	start := 0
	for pos := 0; pos <= len(out); {
		end := bytes.IndexByte(out[pos:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += pos
		}
		if isSeparator(out[pos:end]) {
			docs = append(docs, document{text: out[start:pos], start: start})
			// "--- {a: b}" starts the next document on the same line.
			start = pos + 3
			for start < end && (out[start] == ' ' || out[start] == '\t' || out[start] == '\r') {
				start++
			}
			if start == end || out[start] == '#' {
				start = min(end+1, len(out))
			}
		}
		pos = end + 1
	}
	return append(docs, document{text: out[start:], start: start})
}

// isSeparator reports whether a line starts a new YAML document: "---"
// alone, or followed by whitespace (and a comment or the document's first
// content).
func isSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := line[3:]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r' || rest[0] == '#'
}

func isBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}
