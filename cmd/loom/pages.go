package main

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/loom-operator/loom/internal/pageout"
)

// readyPoll is how often loom run checks, until it is first ready, whether
// start-up is over.
const readyPoll = time.Second

// releasePages pages out the binary's code and read-only data
// (internal/pageout) and logs what it gave back; when says which point of
// start-up is over. An unsupported kernel is logged, never an error.
func releasePages(logger klog.Logger, when string) {
	res, err := pageout.Release()
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		logger.V(1).Info("Cannot give the start-up pages back", "after", when, "reason", err.Error())
	case err != nil:
		logger.Info("Cannot give the start-up pages back", "after", when, "err", err.Error())
	default:
		logger.V(1).Info("Gave the start-up pages back", "after", when,
			"fileRSSBeforeKiB", res.FileBefore>>10, "fileRSSAfterKiB", res.FileAfter>>10)
	}
}

// releaseWhenReady pages out the binary once ready reports nil (the
// controllers have started and their caches synced) or standby reports
// true (a replica waiting to lead is as started as it will be), so that
// what start-up alone read does not stay resident; it gives up when ctx
// ends.
func releaseWhenReady(ctx context.Context, logger klog.Logger, ready func() error, standby func() bool) {
	t := time.NewTicker(readyPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if standby() || ready() == nil {
			releasePages(logger, "ready")
			return
		}
	}
}
