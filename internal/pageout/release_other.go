//go:build !linux

package pageout

import (
	"errors"
	"fmt"
	"runtime"
)

// Release does nothing outside Linux: it returns an error that wraps
// errors.ErrUnsupported.
func Release() (Result, error) {
	return Result{}, fmt.Errorf("paging out the binary on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
