package binding

import "testing"

func TestACachedCopyOlderThanTheLastWriteIsStale(t *testing.T) {
	var w writtenGenerations
	if w.stale("ns/b", "u1", 1) {
		t.Fatal("a binding never written is stale")
	}
	w.record("ns/b", "u1", 3)
	for gen, want := range map[int64]bool{2: true, 3: false, 4: false} {
		if got := w.stale("ns/b", "u1", gen); got != want {
			t.Errorf("generation %d: stale %v, want %v", gen, got, want)
		}
	}
	if w.stale("ns/b", "u2", 1) {
		t.Error("a binding re-created under the same name is stale")
	}
	w.forget("ns/b")
	if w.stale("ns/b", "u1", 1) {
		t.Error("a forgotten binding is stale")
	}
}
