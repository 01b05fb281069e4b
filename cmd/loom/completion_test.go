package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// loom completion SHELL prints a script for that shell; an unknown shell
// is a usage error.
func TestCompletion(t *testing.T) {
	tests := []struct {
		shell    string
		want     string // in the script
		wantCode int
	}{
		{shell: "bash", want: "# bash completion V2 for loom"},
		{shell: "zsh", want: "#compdef loom"},
		{shell: "fish", want: "# fish completion for loom"},
		{shell: "powershell", want: "# powershell completion for loom"},
		{shell: "tcsh", wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			out, errOut, code := runLoom(t, "", "completion", tt.shell)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstderr:\n%s", code, tt.wantCode, errOut)
			}
			if tt.want != "" && (!strings.Contains(out, tt.want) || !strings.Contains(out, "__complete")) {
				t.Errorf("loom completion %s printed no script (want %q):\n%.500s", tt.shell, tt.want, out)
			}
		})
	}
}

// Flag values complete where they are known: -o's formats on every
// command that has -o, nothing (not file names) where they are not.
func TestFlagValueCompletion(t *testing.T) {
	formats := []string{"json\tJSON, indented as kubectl -o json indents it", "yaml\tYAML", ":4"} // 4: no file completion
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "render -o", args: []string{"render", "-o", ""}, want: formats},
		{name: "crd --output", args: []string{"crd", "--output", ""}, want: formats},
		{name: "version -o, a prefix: the shell filters", args: []string{"version", "-o", "j"}, want: formats},
		{name: "render -f: YAML files", args: []string{"render", "-f", ""}, want: []string{"yaml", "yml", "json", ":8"}}, // 8: these extensions
		{name: "render -t: folders", args: []string{"render", "-t", ""}, want: []string{":16"}},                          // 16: folders only
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runLoom(t, "", append([]string{"__complete"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("exit %d\n%s", code, errOut)
			}
			if diff := cmp.Diff(tt.want, strings.Split(strings.TrimSpace(out), "\n")); diff != "" {
				t.Errorf("completions (-want +got):\n%s", diff)
			}
		})
	}
}
