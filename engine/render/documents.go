package render

import (
	"bytes"

	"github.com/loom-operator/loom/engine/render/validate"
	"github.com/loom-operator/loom/engine/render/yamldoc"
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
	for i, d := range yamldoc.Split(out) {
		idx := i + 1
		end := d.Start + len(d.Text)
		if bytes.Contains(d.Text, noValue) {
			d.Text = bytes.ReplaceAll(d.Text, noValue, nil)
		}
		if yamldoc.IsBlank(d.Text) {
			continue
		}
		if c := cache.Get(d.Text); c != nil {
			docs = append(docs, renderedDoc{obj: deepCopyMap(c), doc: idx, line: s.docLine(file, idx), end: end})
			continue
		}
		obj, err := yamldoc.Decode(d.Text)
		if err != nil {
			return nil, s.yamlError(file, idx, d.Text, err)
		}
		if obj == nil { // only comments
			continue
		}
		if err := validate.Object(obj); err != nil {
			return nil, s.validationError(file, idx, obj, err)
		}
		cache.Put(d.Text, obj)
		docs = append(docs, renderedDoc{obj: deepCopyMap(obj), doc: idx, line: s.docLine(file, idx), end: end})
	}
	return docs, nil
}
