package chart

import (
	"encoding/base64"
	"path"
	"strings"

	"github.com/gobwas/glob"
)

// Files is a chart's .Files: every file of the chart outside templates/
// and charts/, by its path in the chart. Its methods are the ones Helm
// gives templates, with Helm's results.
type Files map[string][]byte

// GetBytes is the file's content, or no bytes when there is no such file.
func (f Files) GetBytes(name string) []byte {
	if b, ok := f[name]; ok {
		return b
	}
	return []byte{}
}

// Get is the file's content as a string, or "".
func (f Files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob is the files whose path matches pattern (gobwas/glob syntax with
// "/" as the separator, as Helm's); a pattern that does not compile
// matches every file, as in Helm.
func (f Files) Glob(pattern string) Files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g = glob.MustCompile("**")
	}
	out := Files{}
	for name, b := range f {
		if g.Match(name) {
			out[name] = b
		}
	}
	return out
}

// AsConfig is the files as a ConfigMap's data: YAML of base name to
// content.
func (f Files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for name, b := range f {
		m[path.Base(name)] = string(b)
	}
	return toYAML(m)
}

// AsSecrets is the files as a Secret's data: YAML of base name to
// base64 content.
func (f Files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := make(map[string]string, len(f))
	for name, b := range f {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(b)
	}
	return toYAML(m)
}

// Lines is the file's lines, without a final newline's empty line.
func (f Files) Lines(name string) []string {
	if f == nil || len(f[name]) == 0 {
		return []string{}
	}
	s := strings.TrimSuffix(string(f[name]), "\n")
	return strings.Split(s, "\n")
}
