package config

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// policy decodes an inline YAML rollout block.
func policy(t *testing.T, src string) *Policy {
	t.Helper()
	var p Policy
	if err := yaml.UnmarshalStrict([]byte(src), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name, src, err string
	}{
		{name: "the issue's example", src: "{steps: [1, 10%, 50%, 100%], readyTimeout: 5m, soak: 1m, onFailure: rollback}"},
		{name: "all at once in one step", src: "{steps: ['100%']}"},
		{name: "pause", src: "{steps: [2, 100%], onFailure: pause}"},
		{name: "no steps", src: "{steps: []}", err: "at least one step"},
		{name: "a step of 0", src: "{steps: [0, 100%]}", err: "steps[0]: a step of 0 moves no parent"},
		{name: "a step of 0%", src: "{steps: [0%, 100%]}", err: "steps[0]: a step of 0 moves no parent"},
		{name: "not 100% last", src: "{steps: [1, 50%]}", err: `the last step must be "100%", not 50%`},
		{name: "a count last", src: "{steps: [1, 5]}", err: `the last step must be "100%", not 5`},
		{name: "shrinking share", src: "{steps: [50%, 10%, 100%]}", err: "steps[1]: 10% is smaller"},
		{name: "shrinking count", src: "{steps: [5, 2, 100%]}", err: "steps[1]: 2 is smaller"},
		{name: "over 100%", src: "{steps: [150%]}", err: `"150%" is not a percentage`},
		{name: "a word", src: "{steps: [half, 100%]}", err: `"half" is neither a count nor a percentage`},
		{name: "negative", src: "{steps: [-1, 100%]}", err: "-1 is negative"},
		{name: "bad onFailure", src: "{steps: [100%], onFailure: retry}", err: `"retry" is neither rollback nor pause`},
		{name: "zero timeout", src: "{steps: [100%], readyTimeout: 0s}", err: "readyTimeout: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := policy(t, tt.src).Validate()
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tt.err)
			}
		})
	}
}

func TestCount(t *testing.T) {
	p := &Policy{Steps: []intstr.IntOrString{intstr.FromInt32(1), intstr.FromString("10%"), intstr.FromString("25%"), intstr.FromString("33%"), intstr.FromString("100%")}}
	tests := []struct {
		total int
		want  []int // per step, then one past the last
	}{
		{total: 20, want: []int{1, 2, 5, 7, 20, 20}},
		{total: 1, want: []int{1, 1, 1, 1, 1, 1}}, // fewer parents than steps
		{total: 3, want: []int{1, 1, 1, 1, 3, 3}}, // 10% of 3 rounds up to 1
		{total: 0, want: []int{0, 0, 0, 0, 0, 0}}, // no parents
		{total: 1000, want: []int{1, 100, 250, 330, 1000, 1000}},
		{total: 7, want: []int{1, 1, 2, 3, 7, 7}}, // 25% of 7 = 1.75 → 2; 33% = 2.31 → 3
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.total), func(t *testing.T) {
			var got []int
			for i := range len(p.Steps) + 1 {
				got = append(got, p.Count(i, tt.total))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Count (-want +got):\n%s", diff)
			}
		})
	}
}
