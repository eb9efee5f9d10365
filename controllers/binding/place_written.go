package binding

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// writtenGenerations remembers, per binding, the generation its last
// placement write produced. A binding read from the cache at an older
// generation is one the cache has not caught up on: deciding on it would
// start from the placement before that write (and a merge patch from it
// would move replicas the write had just placed), so the decision waits
// for the write's own watch event — the expectations of Kubernetes'
// controllers, for one field.
type writtenGenerations struct {
	mu sync.Mutex
	m  map[string]written
}

type written struct {
	uid        types.UID
	generation int64
}

// stale says whether the cached binding predates the last write to it.
func (w *writtenGenerations) stale(key string, uid types.UID, generation int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.m[key]
	return ok && last.uid == uid && generation < last.generation
}

func (w *writtenGenerations) record(key string, uid types.UID, generation int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]written{}
	}
	w.m[key] = written{uid: uid, generation: generation}
}

func (w *writtenGenerations) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.m, key)
}

// wrote says whether generation is the one the controller's own last write
// to the binding produced.
func (w *writtenGenerations) wrote(key string, uid types.UID, generation int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.m[key]
	return ok && last.uid == uid && generation == last.generation
}
