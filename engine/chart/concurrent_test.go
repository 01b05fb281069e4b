package chart

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Renders of one chart from many goroutines, with repeated and distinct
// values, give what one goroutine gives alone: the parsed shapes, the
// renderers' pool, the prepared values and the kept outputs are shared
// safely (make test runs this package with -race).
func TestConcurrentRendersAgree(t *testing.T) {
	app := filepath.Join("testdata", "charts", "app")
	values := []string{``, `{replicaCount: 7, commonLabels: {a: b}}`, `{ingress: {enabled: true}, config: {message: "{{ .Release.Namespace }}"}}`, `{autoscaling: {enabled: true}}`}
	rel := Release{Name: "store", Namespace: "prod", Revision: 1, IsInstall: true}
	want := make([]map[string]string, len(values))
	for i, v := range values {
		want[i], _ = loomRender(t, app, readValues(t, v), rel)
	}
	c, _, err := Load(os.DirFS(filepath.Dir(app)), filepath.Base(app), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range 12 {
				i := (g + n) % len(values)
				res, err := c.Render(readValues(t, values[i]), Env{Release: rel})
				if err != nil {
					errs <- err.Error()
					return
				}
				got := map[string]string{}
				for _, f := range res.Files {
					got[f.Name] = f.Text
				}
				if diff := cmp.Diff(want[i], got); diff != "" {
					errs <- diff
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
