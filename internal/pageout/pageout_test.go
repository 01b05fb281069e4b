package pageout

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const maps = `00400000-01e50000 r-xp 00000000 fe:00 9979218                            /work/bin/loom
01e50000-03af3000 r--p 01a50000 fe:00 9979218                            /work/bin/loom
03af3000-03bb4000 rw-p 036f3000 fe:00 9979218                            /work/bin/loom
03bb4000-03c00000 rw-p 00000000 00:00 0
32cab000000-32cabc00000 rw-p 00000000 00:00 0
7f29684d0000-7f29684f6000 r--p 00000000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7f29684f6000-7f296864c000 r-xp 00026000 fe:00 326269                     /usr/lib/x86_64-linux-gnu/libc.so.6
7f2968700000-7f2968710000 r--s 00000000 fe:00 9979218                    /work/bin/loom
7f2968800000-7f2968810000 r-xp 00000000 fe:01 9979218                    /other/device/same/inode
7ffd1000-7ffd2000 r-xp 00000000 fe:00 9979218                            /work/bin/loom (deleted)
`

func TestExecutableMappings(t *testing.T) {
	tests := []struct {
		name string
		maps string
		dev  string
		ino  uint64
		want []Mapping
	}{
		{
			name: "the binary's code and read-only data, not its data, libc's, a shared or another device's mapping",
			maps: maps, dev: "fe:00", ino: 9979218,
			want: []Mapping{
				{Start: 0x400000, End: 0x1e50000, Perms: "r-xp"},
				{Start: 0x1e50000, End: 0x3af3000, Perms: "r--p"},
				{Start: 0x7ffd1000, End: 0x7ffd2000, Perms: "r-xp"},
			},
		},
		{name: "another file", maps: maps, dev: "fe:00", ino: 1},
		{name: "no mappings", maps: "", dev: "fe:00", ino: 9979218},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := executableMappings(strings.NewReader(tt.maps), tt.dev, tt.ino)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestExecutableMappingsRefusesGarbage(t *testing.T) {
	if _, err := executableMappings(strings.NewReader("zz-01 r-xp 0 fe:00 7 /bin/x\n"), "fe:00", 7); err == nil {
		t.Fatal("a mapping with a bad address parsed")
	}
}
