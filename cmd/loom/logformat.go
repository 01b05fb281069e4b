package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

// Log formats of loom run's --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// setLogFormat makes Loom log in format to w. text is klog's own format,
// as before. json writes one JSON object per line, with log/slog's JSON
// handler (keys time, level, msg, then the line's keys and values): klog
// is given it as its logger, so the context's loggers (klog.FromContext),
// klog's global functions and log/slog (Helm's SDK) all write through it.
// A V(n) line is written at slog level -n (V(4) is DEBUG), when n is at
// most verbosity (-v).
func setLogFormat(format string, verbosity int, w io.Writer) error {
	switch format {
	case "", logFormatText:
		return nil
	case logFormatJSON:
		h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.Level(-verbosity)})
		// ContextualLogger: klog.Background() is this logger itself, so
		// that a V(n) line is decided by the handler's level.
		klog.SetLoggerWithOptions(logr.FromSlogHandler(h), klog.ContextualLogger(true))
		slog.SetDefault(slog.New(h))
		return nil
	}
	return fmt.Errorf("--log-format %q: want %s or %s", format, logFormatText, logFormatJSON)
}
