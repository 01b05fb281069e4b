package yamldoc

import "testing"

func TestLocate(t *testing.T) {
	src := []byte("a: 1\n---\nkind: X\n- name: y\n---\nb: 2\nname: z\n")
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"first document", DocLine(src, 1), 1},
		{"second document", DocLine(src, 2), 3},
		{"third document", DocLine(src, 3), 6},
		{"a document past the last", DocLine(src, 9), 1},
		{"a key as a sequence item", FindLine(src, 3, func(l []byte) bool { return IsKeyLine(l, "name") }), 4},
		{"not past the document's end", FindLine(src, 1, func(l []byte) bool { return IsKeyLine(l, "b") }), 1},
		{"within its own document", FindLine(src, 6, func(l []byte) bool { return IsKeyLine(l, "name") }), 7},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: line %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if IsKeyLine([]byte("  othername: x"), "name") {
		t.Error("IsKeyLine matched another key that ends with the key")
	}
}
