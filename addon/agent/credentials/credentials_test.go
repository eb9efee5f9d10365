package credentials

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func kubeconfig(server, token string) []byte {
	return []byte(`apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "` + server + `"}}]
users: [{name: agent, user: {token: "` + token + `"}}]
contexts: [{name: hub, context: {cluster: hub, user: agent}}]
current-context: hub
`)
}

// watch runs WaitForChange and reports its return on the channel.
func watch(f *File) (<-chan error, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.WaitForChange(ctx) }()
	return done, cancel
}

// tick steps the fake clock one interval once the watcher waits on it.
func tick(t *testing.T, c *clocktesting.FakeClock, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !c.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
	c.Step(d)
}

func returned(done <-chan error) (error, bool) {
	select {
	case err := <-done:
		return err, true
	case <-time.After(100 * time.Millisecond):
		return nil, false
	}
}

func TestRotatedKubeconfigIsSeenAtTheNextPollAndLoadedWithTheNewToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig("https://hub.example:6443", "old"), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := clocktesting.NewFakeClock(time.Now())
	f := &File{Path: path, Interval: 10 * time.Second, Clock: clock}
	cfg, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerToken != "old" || cfg.Host != "https://hub.example:6443" {
		t.Fatalf("loaded host %s token %q", cfg.Host, cfg.BearerToken)
	}

	done, cancel := watch(f)
	defer cancel()
	tick(t, clock, 10*time.Second)
	if _, ok := returned(done); ok {
		t.Fatal("WaitForChange returned although the file did not change")
	}

	// Rewritten with the same bytes (the kubelet's periodic sync): no change.
	if err := os.WriteFile(path, kubeconfig("https://hub.example:6443", "old"), 0o600); err != nil {
		t.Fatal(err)
	}
	tick(t, clock, 10*time.Second)
	if _, ok := returned(done); ok {
		t.Fatal("WaitForChange returned for a file rewritten with the same content")
	}

	// Briefly absent, as while a Secret volume's symlink is swapped: no change.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tick(t, clock, 10*time.Second)
	if _, ok := returned(done); ok {
		t.Fatal("WaitForChange returned while the file was absent")
	}

	if err := os.WriteFile(path, kubeconfig("https://hub.example:6443", "new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := returned(done); ok {
		t.Fatal("WaitForChange returned before its next poll")
	}
	tick(t, clock, 10*time.Second)
	err, ok := returned(done)
	if !ok || err != nil {
		t.Fatalf("WaitForChange after rotation: returned %v, err %v; want nil at the next poll", ok, err)
	}
	cfg, err = f.Load()
	if err != nil || cfg.BearerToken != "new" {
		t.Fatalf("reloaded token %q, err %v; want the new token", cfg.BearerToken, err)
	}

	// Once loaded, the new content is the reference again.
	again, cancelAgain := watch(f)
	defer cancelAgain()
	tick(t, clock, 10*time.Second)
	if _, ok := returned(again); ok {
		t.Fatal("WaitForChange returned for content already loaded")
	}
}

func TestWaitForChangeEndsWithItsContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig("https://hub.example:6443", "t"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &File{Path: path, Interval: time.Hour, Clock: clocktesting.NewFakeClock(time.Now())}
	if _, err := f.Load(); err != nil {
		t.Fatal(err)
	}
	done, cancel := watch(f)
	cancel()
	err, ok := returned(done)
	if !ok || err != context.Canceled {
		t.Fatalf("WaitForChange after cancel: returned %v, err %v; want context.Canceled", ok, err)
	}
}
