package yamldoc

import "bytes"

// Document is one YAML document of a stream.
type Document struct {
	// Text is the document's bytes, without its "---" line.
	Text []byte
	// Start is the offset of Text in the stream.
	Start int
}

// Split splits a YAML stream at its document separators: lines that
// start with "---" and whitespace, or are just "---".
func Split(out []byte) []Document {
	var docs []Document
	start := 0
	for pos := 0; pos <= len(out); {
		end := bytes.IndexByte(out[pos:], '\n')
		if end < 0 {
			end = len(out)
		} else {
			end += pos
		}
		if IsSeparator(out[pos:end]) {
			docs = append(docs, Document{Text: out[start:pos], Start: start})
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
	return append(docs, Document{Text: out[start:], Start: start})
}

// IsSeparator reports whether a line starts a new YAML document: "---"
// alone, or followed by whitespace (and a comment or the document's first
// content).
func IsSeparator(line []byte) bool {
	if !bytes.HasPrefix(line, []byte("---")) {
		return false
	}
	rest := line[3:]
	return len(rest) == 0 || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r' || rest[0] == '#'
}

// IsBlank reports whether b holds only whitespace: an empty document.
func IsBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}
