//go:build linux

package pageout

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/loom-operator/loom/internal/procmem"
	"golang.org/x/sys/unix"
)

// Release pages out the running binary's private read-only mappings (see
// the package doc). A kernel older than 5.4, which has no MADV_PAGEOUT,
// gives an error that wraps errors.ErrUnsupported; nothing is changed
// then.
func Release() (Result, error) {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return Result{}, fmt.Errorf("stat the running binary: %w", err)
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(st.Dev), unix.Minor(st.Dev))
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return Result{}, fmt.Errorf("read the process's mappings: %w", err)
	}
	ms, err := executableMappings(maps, dev, st.Ino)
	_ = maps.Close()
	if err != nil {
		return Result{}, err
	}
	if len(ms) == 0 {
		return Result{}, fmt.Errorf("no read-only mapping of the running binary (device %s, inode %d)", dev, st.Ino)
	}
	var res Result
	if m, err := procmem.Read(0); err == nil {
		res.FileBefore = m.File
	}
	for _, m := range ms {
		if err := madvise(m, unix.MADV_PAGEOUT); err != nil {
			if errors.Is(err, unix.EINVAL) {
				return res, fmt.Errorf("madvise(MADV_PAGEOUT) on %x-%x: %w (%w)", m.Start, m.End, err, errors.ErrUnsupported)
			}
			return res, fmt.Errorf("madvise(MADV_PAGEOUT) on %x-%x: %w", m.Start, m.End, err)
		}
		res.Advised += int64(m.Len())
	}
	if m, err := procmem.Read(0); err == nil {
		res.FileAfter = m.File
	}
	return res, nil
}

// madvise advises the kernel about m's pages. The addresses come from
// /proc/self/maps and are passed as they are: Go never reads memory
// through them.
func madvise(m Mapping, advice int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.Start, uintptr(m.Len()), uintptr(advice)); errno != 0 {
		return errno
	}
	return nil
}
