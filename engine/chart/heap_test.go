package chart

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestTplCachesAreBoundedInBytes renders parents whose values hold a
// distinct text that the chart passes to tpl, one after the other and
// then from 8 goroutines at once, as the controller's workers do: what
// the chart keeps for later renders (parsed tpl texts, prepared values,
// outputs) must stay within a few tens of MiB, whatever the texts: 100
// texts of 130 KB, and 600 of 16 KB (each small enough to be kept).
func TestTplCachesAreBoundedInBytes(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("renders tens of MB of template text, and measures the heap")
	}
	for _, tc := range []struct {
		size, n int
		blob    bool
	}{{130 << 10, 100, false}, {16 << 10, 600, false}, {1 << 20, 100, true}} {
		t.Run(fmt.Sprintf("%d KiB blob=%t", tc.size>>10, tc.blob), func(t *testing.T) {
			kept := heapKeptByTpl(t, tc.size, tc.n, tc.blob)
			t.Logf("heap kept by the chart after %d renders of distinct %d KiB values: %.1f MiB", tc.n+64, tc.size>>10, float64(kept)/(1<<20))
			if kept > 64<<20 {
				t.Errorf("the chart keeps %.1f MiB after %d renders of distinct %d KiB values, want under 64 MiB", float64(kept)/(1<<20), tc.n+64, tc.size>>10)
			}
		})
	}
}

// heapKeptByTpl renders n texts of size bytes, then 64 more from 8
// goroutines, and returns the heap the chart keeps. With blob, the text
// is short and the values hold a map of size bytes that no template
// reads.
func heapKeptByTpl(t *testing.T, size, n int, blob bool) int64 {
	fsys := fstest.MapFS{
		"c/Chart.yaml":        {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"c/values.yaml":       {Data: []byte("text: \"\"\n")},
		"c/templates/cm.yaml": {Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: {{ tpl .Values.text . | len }}\n")},
	}
	c, _, err := Load(fsys, "c", Options{})
	if err != nil {
		t.Fatal(err)
	}
	text := func(i int) string {
		// Dense actions: the parsed form of text like this takes tens
		// of times its size.
		var b strings.Builder
		fmt.Fprintf(&b, "# %d\n", i)
		for b.Len() < size {
			b.WriteString("{{ .Release.Name }}{{ .Values.x }}\n")
		}
		return b.String()
	}
	values := func(i int) map[string]any {
		if !blob {
			return map[string]any{"text": text(i)}
		}
		m := map[string]any{}
		for k := 0; k*128 < size; k++ {
			m[fmt.Sprintf("k%d", k)] = fmt.Sprintf("%0128d", i)
		}
		return map[string]any{"text": "{{ .Release.Name }}", "blob": m}
	}
	env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}}
	before := heapInUse()
	for i := range n {
		if _, err := c.Render(values(i), env); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			var err error
			for i := range 8 {
				if _, e := c.Render(values(n+8*g+i), env); e != nil {
					err = e
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	kept := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(c)
	return kept
}

// TestShapesAreBoundedInBytes renders a chart whose values pick any of
// 64 sets of subcharts, each subchart ~100 KB of templates, with a tpl
// text per render: the shapes the chart keeps stay within maxShapeBytes,
// and the tpl budget counts exactly what the kept renderers hold.
func TestShapesAreBoundedInBytes(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("parses 64 shapes of up to 600 KB, and measures the heap")
	}
	fsys := fstest.MapFS{
		"c/values.yaml":       {Data: []byte("text: \"\"\n")},
		"c/templates/cm.yaml": {Data: []byte("v: {{ tpl .Values.text . | len }}\n")},
	}
	var deps strings.Builder
	deps.WriteString("apiVersion: v2\nname: c\nversion: 0.1.0\ndependencies:\n")
	body := strings.Repeat("{{ .Release.Name }}{{ .Values.x }}\n", (100<<10)/36)
	for i := range 6 {
		fmt.Fprintf(&deps, "  - name: s%d\n    version: 0.1.0\n    condition: s%d.enabled\n", i, i)
		fsys[fmt.Sprintf("c/charts/s%d/Chart.yaml", i)] = &fstest.MapFile{Data: []byte(fmt.Sprintf("apiVersion: v2\nname: s%d\nversion: 0.1.0\n", i))}
		fsys[fmt.Sprintf("c/charts/s%d/values.yaml", i)] = &fstest.MapFile{Data: []byte("enabled: false\n")}
		fsys[fmt.Sprintf("c/charts/s%d/templates/t.yaml", i)] = &fstest.MapFile{Data: []byte(body)}
	}
	fsys["c/Chart.yaml"] = &fstest.MapFile{Data: []byte(deps.String())}
	c, _, err := Load(fsys, "c", Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}}
	before := heapInUse()
	for mask := range 64 {
		values := map[string]any{"text": fmt.Sprintf("{{ .Release.Name }} %d %s", mask, strings.Repeat("{{ .Values.text }}", 1000))}
		for i := range 6 {
			values[fmt.Sprintf("s%d", i)] = map[string]any{"enabled": mask&(1<<i) != 0}
		}
		if _, err := c.Render(values, env); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		shapes, bytes := len(c.shapes), c.shapeBytes
		held := int64(0)
		for _, sh := range c.shapes {
			for range len(sh.pool) {
				r := <-sh.pool
				held += r.tplBytes
				sh.pool <- r
			}
		}
		c.mu.Unlock()
		if shapes > maxShapes || bytes > maxShapeBytes {
			t.Fatalf("after %d renders: %d shapes weighing %d bytes, want at most %d and %d", mask+1, shapes, bytes, maxShapes, maxShapeBytes)
		}
		if got := c.tplBytes.Load(); got != held {
			t.Fatalf("after %d renders: the tpl budget counts %d bytes, the kept renderers hold %d", mask+1, got, held)
		}
	}
	kept := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(c)
	t.Logf("heap kept by the chart after 64 shapes: %.1f MiB", float64(kept)/(1<<20))
	if kept > 96<<20 {
		t.Errorf("the chart keeps %.1f MiB after 64 shapes, want under 96 MiB", float64(kept)/(1<<20))
	}
}

// TestTplBudgetUnderConcurrentRenders renders, from 8 goroutines at once,
// more distinct tpl texts than the budget holds, so that renderers drop
// their texts while others take theirs (run it with -race): the renders
// agree with their texts, and afterwards the budget counts exactly what
// the pooled renderers hold.
func TestTplBudgetUnderConcurrentRenders(t *testing.T) {
	fsys := fstest.MapFS{
		"c/Chart.yaml":        {Data: []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n")},
		"c/values.yaml":       {Data: []byte("text: \"\"\n")},
		"c/templates/cm.yaml": {Data: []byte("v: {{ tpl .Values.text . | len }}\n")},
	}
	c, _, err := Load(fsys, "c", Options{})
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Release: Release{Name: "r", Namespace: "ns", Revision: 1, IsInstall: true}}
	size := maxTplBytes / tplWeight / 20 // 20 texts fill the budget
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 10 {
				text := fmt.Sprintf("%d-%d ", g, i) + strings.Repeat("{{ .Release.Name }}", size/19)
				res, err := c.Render(map[string]any{"text": text}, env)
				if err != nil {
					errs <- err
					return
				}
				want := fmt.Sprintf("v: %d\n", len(fmt.Sprintf("%d-%d ", g, i))+size/19)
				if got := res.Files[0].Text; got != want {
					errs <- fmt.Errorf("goroutine %d, render %d: %q, want %q", g, i, got, want)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	held := int64(0)
	for _, sh := range c.shapes {
		for range len(sh.pool) {
			r := <-sh.pool
			held += r.tplBytes
			sh.pool <- r
		}
	}
	if got := c.tplBytes.Load(); got != held || got > maxTplBytes {
		t.Errorf("the tpl budget counts %d bytes, the pooled renderers hold %d (budget %d)", got, held, maxTplBytes)
	}
}
