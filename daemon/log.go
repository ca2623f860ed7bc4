package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a logger writing to w at level ("debug", "info", "warn",
// "error") in format ("console", "json", or "auto": console when w is a
// terminal, JSON otherwise, e.g. under journald or when piped).
func newLogger(level, format string, w *os.File) (*zap.Logger, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil {
		return nil, fmt.Errorf("parse log level: %w", err)
	}
	tty := isTerminal(w)
	if format == "auto" {
		format = "json"
		if tty {
			format = "console"
		}
	}

	var enc zapcore.Encoder
	switch format {
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("2006-01-02T15:04:05.000Z0700")
		ec.EncodeDuration = zapcore.StringDurationEncoder
		ec.CallerKey = ""
		if tty {
			ec.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		enc = zapcore.NewConsoleEncoder(ec)
	case "json":
		ec := zap.NewProductionEncoderConfig()
		ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder
		ec.EncodeDuration = zapcore.StringDurationEncoder
		ec.CallerKey = ""
		enc = zapcore.NewJSONEncoder(ec)
	default:
		return nil, fmt.Errorf("parse log format: unknown format %q", format)
	}
	ws := zapcore.Lock(w)
	return zap.New(zapcore.NewCore(enc, ws, lvl), zap.ErrorOutput(ws)), nil
}

// isTerminal reports whether f is a character device (a terminal), without
// pulling in a terminal library.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
