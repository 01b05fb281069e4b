package tmplfuncs

import (
	"strings"
	"testing"
)

// TestBoundedRefusesBeforeBuilding: each capped function refuses what it
// would build over its cap, naming it, and builds what is under it.
func TestBoundedRefusesBeforeBuilding(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func() (any, error)
		err  string
	}{
		{"until under the cap", func() (any, error) { return until(3) }, ""},
		{"until over", func() (any, error) { return until(MaxListItems + 1) }, "until would make 1048577 items"},
		{"untilStep over, downwards", func() (any, error) { return untilStep(MaxListItems, -MaxListItems, -1) }, "untilStep would make 2097152 items"},
		{"seq with an end only, over", func() (any, error) { return seq(MaxListItems + 1) }, "seq would make"},
		{"repeat over the output cap", func() (any, error) { return repeat(MaxOutputBytes, "ab") }, "repeat would make 67108864 bytes"},
		{"repeat of a negative count", func() (any, error) { return repeat(-1, "ab") }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.call()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	for _, name := range []string{"until", "untilStep", "seq", "repeat"} {
		if Bounded()[name] == nil || Base()[name] == nil {
			t.Errorf("%s is missing from Bounded or Base", name)
		}
	}
	for _, name := range Removed {
		if _, ok := Base()[name]; ok {
			t.Errorf("Base has %s, which reads the environment or the network", name)
		}
	}
}
