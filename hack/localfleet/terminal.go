package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// terminal is where steps go; a variable so that a test can read it.
var terminal io.Writer = os.Stdout

// say prints one step of `make dev` to the terminal.
func say(format string, args ...any) {
	fmt.Fprintf(terminal, "localfleet: "+format+"\n", args...)
}

// routeLogs sends everything that logs inside this process through klog
// or controller-runtime (client-go's reflectors and warnings, the fleet's
// clients) to dir/localfleet.log instead of stderr. The processes the fleet
// starts log to their own files, and the in-process test provider to the
// hub's logs/test-provider.log (package fleet).
func routeLogs(dir string) (string, io.Closer, error) {
	path := filepath.Join(dir, "localfleet.log")
	logger, closer, err := fleet.FileLogger(path, 2)
	if err != nil {
		return "", nil, err
	}
	klog.SetLogger(logger)
	ctrllog.SetLogger(logger)
	return path, closer, nil
}
