package render

import (
	"fmt"
	"strings"

	"github.com/loom-operator/loom/engine/render/tmpltree"
)

// parseError is fromTemplateError for a parse of file's text src, except
// that an unexpected end of the text, which text/template reports at the
// file's last line, is reported where the block that is not closed opens.
func parseError(file string, src []byte, err error) *Error {
	e := fromTemplateError(file, err)
	if e.File != file || !strings.HasSuffix(e.Err.Error(), "unexpected EOF") {
		return e
	}
	if word, line, ok := tmpltree.Unclosed(src); ok {
		return &Error{File: file, Line: line, Err: fmt.Errorf("unclosed {{ %s }}: no {{ end }} before the end of the file", word)}
	}
	return e
}
