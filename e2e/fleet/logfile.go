package fleet

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2/textlogger"
)

// FileLogger is a logr.Logger that writes klog-formatted lines to path
// (created with its directory, appended to), for what runs inside the
// test process: the test provider, and in `make dev` everything that logs
// through klog or controller-runtime. A terminal shows steps, not logs.
// Close the returned closer when the logger is no longer used.
func FileLogger(path string, verbosity int) (logr.Logger, io.Closer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return logr.Discard(), nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return logr.Discard(), nil, fmt.Errorf("log file: %w", err)
	}
	cfg := textlogger.NewConfig(textlogger.Output(f), textlogger.Verbosity(verbosity))
	return textlogger.NewLogger(cfg), f, nil
}
