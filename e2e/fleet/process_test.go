package fleet

import (
	"strings"
	"testing"
	"time"
)

// A process that exits at start says why in the error itself: the end of
// its log, which may be gone with a temporary folder by the time the error
// is read.
func TestAnExitedProcessReportsTheEndOfItsLog(t *testing.T) {
	p := newProcess("failing", "/bin/sh", t.TempDir(), "-c", "for i in $(seq 1 20); do echo line $i; done; echo 'bind: address already in use'; exit 3")
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for err = p.exited(); err == nil && time.Now().Before(deadline); err = p.exited() {
		time.Sleep(10 * time.Millisecond)
	}
	if err == nil {
		t.Fatal("the process did not exit within 10 s")
	}
	msg := err.Error()
	for _, want := range []string{"exit status 3", "bind: address already in use", "line 20", "line 12"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the error does not say %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "line 11\n") {
		t.Errorf("the error holds more than the log's last 10 lines:\n%s", msg)
	}
}
