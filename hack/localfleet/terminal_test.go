package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// logLine matches what loggers print: klog's header (I1202 00:12:11.123456
// 4242 file.go:12]), controller-runtime's zap console and JSON encodings.
var logLine = regexp.MustCompile(`^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ |^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*\t(DEBUG|INFO|ERROR)\t|^\{"(level|ts)"`)

func TestMakeDevTerminalShowsStepsAndLogsGoToTheStateDirectory(t *testing.T) {
	dir := t.TempDir()
	// Whatever still reached stderr would be on the user's terminal.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	screen := &bytes.Buffer{}
	terminal = screen
	defer func() { os.Stderr, terminal = stderr, os.Stdout }()

	path, closer, err := routeLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	say("state and logs in %s (this process logs to %s)", dir, path)
	// What controller-runtime and client-go log in process while the fleet starts.
	ctrllog.Log.WithName("controller").Info("Starting EventSource", "controller", "testcluster", "source", "kind source: *unstructured.Unstructured")
	ctrllog.Log.WithName("controller").Info("Starting workers", "controller", "testcluster", "worker count", 1)
	klog.InfoS("Starting reflector", "type", "*v1.Secret")
	klog.Warningf("Warning: %s", "v1 ComponentStatus is deprecated")
	klog.Background().Error(nil, "Failed to watch", "reflector", "pkg/mod/k8s.io/client-go/tools/cache/reflector.go:251")
	say("waiting up to 3m for the CAPI Clusters to be Available")
	klog.Flush()
	_ = closer.Close()
	_ = w.Close()
	leaked, _ := io.ReadAll(r)

	out := screen.String() + string(leaked)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if logLine.MatchString(line) || !strings.HasPrefix(line, "localfleet: ") {
			t.Errorf("terminal line is not a step of make dev: %q", line)
		}
	}
	if path != filepath.Join(dir, "localfleet.log") {
		t.Errorf("log path = %s", path)
	}
	logged, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Starting EventSource", "Starting workers", "Starting reflector", "ComponentStatus is deprecated", "Failed to watch"} {
		if !strings.Contains(string(logged), want) {
			t.Errorf("%s lacks %q:\n%s", path, want, logged)
		}
	}
}

func TestLogLineRecognisesTheFormatsMakeDevMustNotPrint(t *testing.T) {
	for _, line := range []string{
		`I1202 00:12:11.123456   4242 controller.go:218] "Starting EventSource" controller="testcluster"`,
		`W1202 00:12:11.123456 4242 warnings.go:70] v1 ComponentStatus is deprecated`,
		"2026-12-02T00:12:11Z\tINFO\tStarting workers\t{\"worker count\": 1}",
		`{"level":"info","ts":"2026-12-02T00:12:11Z","msg":"Starting workers"}`,
	} {
		if !logLine.MatchString(line) {
			t.Errorf("not recognised as a log line: %q", line)
		}
	}
	for _, line := range []string{"localfleet: fleet up in 1m2s", "fleet: hub: starting etcd and kube-apiserver", "hub:     bin/kubectl --kubeconfig x get memberclusters"} {
		if logLine.MatchString(line) {
			t.Errorf("a step taken for a log line: %q", line)
		}
	}
}
