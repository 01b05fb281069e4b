// Package pageout gives the kernel back the pages of the running binary
// that only its start-up read.
//
// A Go program's start-up (every linked package's init, then the first
// list of each informer, the first render, the first apply) touches code
// and read-only data all over its binary, and the kernel maps the 64 KiB
// around each page fault (fault-around), so most of the binary's file
// stays resident for the life of the process although a running Loom
// reads a small part of it: 42 of 52 MiB of an idle `loom run` were the
// binary's pages, and 4.7 MiB of them were read again in the 15 s after
// they were paged out. Release pages out the binary's private read-only
// mappings (madvise MADV_PAGEOUT): their clean pages are dropped from the
// process and from the page cache (unless another process maps them), so
// neither the RSS nor the container's memory cgroup holds them, and the
// pages the process still uses are read back from the file on their next
// fault. Writable mappings (the binary's data, the heap) are never
// touched.
package pageout

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Mapping is one private, read-only mapping of the executable's file.
type Mapping struct {
	// Start and End bound its addresses, End exclusive.
	Start, End uintptr
	// Perms is its permissions as /proc/PID/maps prints them: r-xp or r--p.
	Perms string
}

// Len is the mapping's length in bytes.
func (m Mapping) Len() int { return int(m.End - m.Start) }

// Result is what one Release did.
type Result struct {
	// Advised is the bytes of the mappings paged out.
	Advised int64
	// FileBefore and FileAfter are the process's file-backed RSS
	// (RssFile) before and after.
	FileBefore, FileAfter int64
}

// executableMappings returns, from the text of /proc/self/maps, the
// mappings of the file on device dev (as maps prints it, "fe:00") with
// inode ino that are private and not writable: the binary's code and
// read-only data, whose pages are clean copies of the file. Matching the
// file by device and inode, not by path, also finds a binary that was
// replaced on disk while it runs ("(deleted)").
func executableMappings(maps io.Reader, dev string, ino uint64) ([]Mapping, error) {
	var out []Mapping
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		// address perms offset dev inode [path]
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		perms := f[1]
		if len(perms) != 4 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p' {
			continue // writable, unreadable, or shared
		}
		if f[3] != dev {
			continue
		}
		if n, err := strconv.ParseUint(f[4], 10, 64); err != nil || n != ino {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			return nil, fmt.Errorf("parse mapping %q", sc.Text())
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			return nil, fmt.Errorf("parse mapping %q", sc.Text())
		}
		out = append(out, Mapping{Start: uintptr(start), End: uintptr(end), Perms: perms})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mappings: %w", err)
	}
	return out, nil
}
