package statusapply

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
)

// RememberWrites is how long a writer takes its own last write of an
// object's status over the cache's: longer than the cache lags on a loaded
// hub.
const RememberWrites = time.Minute

// LastWrites is what a writer that applies status fields without the
// optimistic lock (Apply, with no resourceVersion) last wrote of each
// object, kept for RememberWrites: an object handled again before the
// cache shows that write starts from it — its transition times, what the
// fields record, and whether anything changed at all. The writer must be
// the fields' only one (and forget an object when it stops being so).
// The zero value is ready to use; safe for concurrent use.
type LastWrites[F any] struct {
	once    sync.Once
	written *cache.Expiring // key → lastWrite[F]
}

type lastWrite[F any] struct {
	uid    types.UID
	fields F
}

func (w *LastWrites[F]) entries() *cache.Expiring {
	w.once.Do(func() { w.written = cache.NewExpiring() })
	return w.written
}

// Remember records f as written now to the object key with uid.
func (w *LastWrites[F]) Remember(key types.NamespacedName, uid types.UID, f F) {
	w.entries().Set(key, lastWrite[F]{uid: uid, fields: f}, RememberWrites)
}

// Get is the last write to the object key with uid (not to an earlier
// object of the same name), if made within RememberWrites.
func (w *LastWrites[F]) Get(key types.NamespacedName, uid types.UID) (F, bool) {
	v, ok := w.entries().Get(key)
	if !ok || v.(lastWrite[F]).uid != uid {
		var zero F
		return zero, false
	}
	return v.(lastWrite[F]).fields, true
}

// Forget drops what was written to key.
func (w *LastWrites[F]) Forget(key types.NamespacedName) {
	w.entries().Delete(key)
}
