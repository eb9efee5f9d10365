package execution

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// inFlight bounds how many Works of one member are applied at once, so
// that a slow member cannot take every worker of the controller: a Work
// over the bound waits without holding a worker, and is handed back (on
// ready) when one of its member's Works finishes.
type inFlight struct {
	limit int
	ready chan<- event.GenericEvent

	mu      sync.Mutex
	running map[string]int
	waiting map[string][]types.NamespacedName
}

func newInFlight(limit int, ready chan<- event.GenericEvent) *inFlight {
	return &inFlight{limit: limit, ready: ready, running: map[string]int{}, waiting: map[string][]types.NamespacedName{}}
}

// acquire takes one of member's slots for work, or records work as waiting
// and returns false.
func (f *inFlight) acquire(member string, work types.NamespacedName) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[member] < f.limit {
		f.running[member]++
		return true
	}
	for _, w := range f.waiting[member] {
		if w == work {
			return false
		}
	}
	f.waiting[member] = append(f.waiting[member], work)
	return false
}

// release gives back member's slot and hands the longest-waiting Work of
// the member back to the queue.
func (f *inFlight) release(member string) {
	f.mu.Lock()
	f.running[member]--
	if f.running[member] <= 0 {
		delete(f.running, member)
	}
	var next *types.NamespacedName
	if q := f.waiting[member]; len(q) > 0 {
		next = &q[0]
		if len(q) == 1 {
			delete(f.waiting, member)
		} else {
			f.waiting[member] = q[1:]
		}
	}
	f.mu.Unlock()
	if next != nil {
		f.ready <- workEvent(*next)
	}
}

// workEvent asks the controller to reconcile the Work key.
func workEvent(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}
