// Package templatewatch tells the Manager (engine/controller) when the
// files of its template sets change, so that it reloads them: it watches
// every folder under the templates folder, hidden ones included, because
// a ConfigMap volume updates by creating a new hidden folder and swapping
// the ..data symlink to it. Bursts of events are coalesced into one call.
package templatewatch

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"k8s.io/klog/v2"
)

// Run watches root and every folder below it, and calls changed once the
// file events of a burst have stopped for debounce. It returns nil when
// ctx is done, and an error when the watch cannot start or stops.
func Run(ctx context.Context, root string, debounce time.Duration, changed func(context.Context)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	if err := addWatches(w, root); err != nil {
		return err
	}
	var timer <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("fsnotify closed its event channel")
			}
			if ev.Has(fsnotify.Create) {
				_ = addWatches(w, ev.Name) // a new folder, or a ConfigMap's new ..data target
			}
			timer = time.After(debounce)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("fsnotify closed its error channel")
			}
			klog.FromContext(ctx).Error(err, "Template watcher error")
		case <-timer:
			timer = nil
			changed(ctx)
		}
	}
}

// addWatches watches root and every folder below it.
func addWatches(w *fsnotify.Watcher, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // vanished while walking: its removal is an event too
		}
		if d.IsDir() {
			return w.Add(p)
		}
		return nil
	})
}
