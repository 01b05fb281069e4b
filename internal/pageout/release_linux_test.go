//go:build linux

package pageout

import (
	"errors"
	"testing"
)

// TestReleaseGivesBackTheBinarysPages pages out this test binary's code
// and read-only data, which its start-up made resident, and checks that
// its file-backed RSS fell, and that the code still runs after.
func TestReleaseGivesBackTheBinarysPages(t *testing.T) {
	res, err := Release()
	if errors.Is(err, errors.ErrUnsupported) {
		t.Skipf("this kernel cannot page out: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res.Advised == 0 {
		t.Fatal("no mapping of the binary was advised")
	}
	if res.FileAfter >= res.FileBefore {
		t.Errorf("file-backed RSS %d KiB before, %d KiB after: nothing was given back", res.FileBefore>>10, res.FileAfter>>10)
	}
	t.Logf("advised %d MiB; RssFile %d -> %d KiB", res.Advised>>20, res.FileBefore>>10, res.FileAfter>>10)
	// The code paged out is read back on its next fault.
	if _, err := Release(); err != nil {
		t.Fatalf("a second release: %v", err)
	}
}
