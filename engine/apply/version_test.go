package apply

import (
	"hash/fnv"
	"testing"
)

func TestVersionOfIsFNV1a(t *testing.T) {
	for _, rv := range []string{"1", "1000", "500", "opaque-Version/χ"} {
		h := fnv.New64a()
		_, _ = h.Write([]byte(rv))
		if got, want := versionOf(rv), version(h.Sum64()); got != want {
			t.Errorf("versionOf(%q) = %x, want %x", rv, got, want)
		}
	}
	if versionOf("") != 0 {
		t.Error(`versionOf("") is not 0`)
	}
	if versionOf("1000") == versionOf("100") {
		t.Error("two resourceVersions have one version")
	}
}
