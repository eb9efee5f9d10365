package binding

import (
	"context"
	"strings"
	"sync"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/metrics"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// waitingBindings are the bindings whose last decision placed less than
// they ask (PartiallyScheduled) or nothing new (Unschedulable,
// NoClusterFit…), indexed by what can complete them: a short binding by
// the members it was denied for capacity, a failed one by any member. When
// a member's capacity model changes, only the bindings it can now help are
// decided again (freedBy), so the cost of one capacity report is bounded
// by the bindings waiting on that member, not by the fleet's bindings.
//
// The index lives in the leader's memory: a new leader decides every
// binding once as its caches fill, which builds it again.
type waitingBindings struct {
	mu        sync.Mutex
	entries   map[string]*waitingEntry
	byMember  map[string]map[string]struct{}
	anyMember map[string]struct{}
	byReason  map[string]int
}

// waitingEntry is what a waiting binding needs.
type waitingEntry struct {
	reason string
	// short are the members the placement was denied for capacity; empty
	// for a failed decision, which any member's room may complete.
	short []string
	req   *capacity.Requirement
	// need is how many replicas must fit on a short member.
	need int64
	// capacityHelps is false where capacity cannot complete the binding
	// (QuotaExceeded: the quota retry wakes it).
	capacityHelps bool
}

// set records a binding's last outcome: reason "" or Success removes it.
func (w *waitingBindings) set(key string, e *waitingEntry) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(key)
	if e == nil || e.reason == "" || e.reason == workv1alpha1.BindingReasonSuccess {
		return
	}
	if w.entries == nil {
		w.entries, w.byMember, w.anyMember, w.byReason = map[string]*waitingEntry{}, map[string]map[string]struct{}{}, map[string]struct{}{}, map[string]int{}
	}
	w.entries[key] = e
	w.byReason[e.reason]++
	metrics.BindingsWaitingForPlacement.WithLabelValues(e.reason).Set(float64(w.byReason[e.reason]))
	if !e.capacityHelps {
		return
	}
	if len(e.short) == 0 {
		w.anyMember[key] = struct{}{}
		return
	}
	for _, m := range e.short {
		if w.byMember[m] == nil {
			w.byMember[m] = map[string]struct{}{}
		}
		w.byMember[m][key] = struct{}{}
	}
}

// forget drops a binding, e.g. once it is deleted.
func (w *waitingBindings) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removeLocked(key)
}

func (w *waitingBindings) removeLocked(key string) {
	e, ok := w.entries[key]
	if !ok {
		return
	}
	delete(w.entries, key)
	delete(w.anyMember, key)
	for _, m := range e.short {
		delete(w.byMember[m], key)
		if len(w.byMember[m]) == 0 {
			delete(w.byMember, m)
		}
	}
	w.byReason[e.reason]--
	metrics.BindingsWaitingForPlacement.WithLabelValues(e.reason).Set(float64(w.byReason[e.reason]))
}

// freedBy lists the waiting bindings (of the cluster-scoped kind or not)
// that member's new capacity model may complete: a binding short on the
// member whose replicas now all fit there by the model alone (held
// capacity only lowers that), and a failed binding for which the member now
// holds more replicas than before.
func (w *waitingBindings) freedBy(member string, before, after *capacity.Model, clusterScoped bool) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	ofKind := func(key string) bool { return strings.Contains(key, "/") != clusterScoped }
	for key := range w.byMember[member] {
		if e := w.entries[key]; ofKind(key) && after.Fit(e.req) >= e.need {
			out = append(out, key)
		}
	}
	for key := range w.anyMember {
		if e := w.entries[key]; ofKind(key) && after != nil && (before == nil || after.Fit(e.req) > before.Fit(e.req)) {
			out = append(out, key)
		}
	}
	return out
}

// len is how many bindings wait (for tests and benchmarks).
func (w *waitingBindings) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// capacityFreed queues, on a member's new capacity model, the waiting
// bindings of one kind that the model may complete (waitingBindings.freedBy).
func (r *Placer) capacityFreed(clusterScoped bool) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			if !ok1 || !ok2 {
				return
			}
			// As in enqueueAll: the snapshot is told before a binding is
			// queued, so that the decision sees the new model.
			r.snapshots.memberChanged()
			before, after := capacity.NewModel(oldM.Status.CapacityModel), capacity.NewModel(newM.Status.CapacityModel)
			for _, key := range r.waiting.freedBy(newM.Name, before, after, clusterScoped) {
				q.Add(reconcile.Request{NamespacedName: objectKeyOf(key)})
			}
		},
	}
}

// objectKeyOf is the inverse of placementKey.
func objectKeyOf(key string) client.ObjectKey {
	if ns, name, ok := strings.Cut(key, "/"); ok {
		return client.ObjectKey{Namespace: ns, Name: name}
	}
	return client.ObjectKey{Name: key}
}
