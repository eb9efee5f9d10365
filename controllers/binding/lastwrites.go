package binding

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
)

// rememberWrites is how long a phase takes its own last write of a
// binding's status over the cache's: longer than the cache lags on a
// loaded hub.
const rememberWrites = time.Minute

// lastWrites is what a phase that writes its status without the optimistic
// lock (the render and aggregate phases) last wrote of each binding, kept
// for rememberWrites: a binding handled again before the cache shows that
// write starts from it — its transition times, and whether anything
// changed at all. Safe for concurrent use.
type lastWrites[F any] struct {
	once    sync.Once
	written *cache.Expiring // key → lastWrite[F]
}

type lastWrite[F any] struct {
	uid    types.UID
	fields F
}

func (w *lastWrites[F]) entries() *cache.Expiring {
	w.once.Do(func() { w.written = cache.NewExpiring() })
	return w.written
}

func (w *lastWrites[F]) remember(key types.NamespacedName, uid types.UID, f F) {
	w.entries().Set(key, lastWrite[F]{uid: uid, fields: f}, rememberWrites)
}

// get is the last write of the binding key with uid (not of an earlier
// binding of the same name), if made within rememberWrites.
func (w *lastWrites[F]) get(key types.NamespacedName, uid types.UID) (F, bool) {
	v, ok := w.entries().Get(key)
	if !ok || v.(lastWrite[F]).uid != uid {
		var zero F
		return zero, false
	}
	return v.(lastWrite[F]).fields, true
}

func (w *lastWrites[F]) forget(key types.NamespacedName) {
	w.entries().Delete(key)
}
