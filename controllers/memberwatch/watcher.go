// Package memberwatch tells the executor of Works at once when an object a
// Work applied changes in its member — its status moves, someone edits or
// deletes it — so that the Work's status, and from it the binding's, follows
// the member within a second instead of at the next periodic re-apply.
//
// What is watched is bounded by what Flotilla applied: for each member, one
// metadata-only watch per (resource, namespace) that holds an applied
// object, selected by Flotilla's managed-by label, started when the first
// Work's object appears there and stopped when the last goes. Namespaced
// watches keep to the namespaces the member identity may read (it is bound
// per managed namespace); only object metadata is kept, without managed
// fields. The executor reads the object itself when it refreshes the Work.
//
// The hub's execution controller and flotilla-agent use it alike: each
// calls Track after applying a Work and Forget when the Work goes; Changed
// is called with the Works whose objects changed.
package memberwatch

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Connections give the configuration a member is watched with: the same
// identity its Works are applied as. A new *rest.Config (e.g. after the
// identity's credentials changed) restarts the member's watches.
type Connections interface {
	WatchConfig(ctx context.Context, member string) (*rest.Config, error)
}

// ConnectionsFunc adapts a function to Connections.
type ConnectionsFunc func(ctx context.Context, member string) (*rest.Config, error)

// WatchConfig calls f.
func (f ConnectionsFunc) WatchConfig(ctx context.Context, member string) (*rest.Config, error) {
	return f(ctx, member)
}

// Watcher is safe for concurrent use. Its watches run until Start's context
// ends (a manager.Runnable: only the leader applies Works, only it watches).
type Watcher struct {
	Connections Connections
	// Changed is told which Work to look at again, and whether an object of
	// it was edited (its generation moved: someone changed its spec, to be
	// repaired by a full apply) rather than only its status. It must not
	// block long (it runs on the watch's event goroutine).
	Changed func(work types.NamespacedName, edited bool)
	Log     logr.Logger

	mu      sync.Mutex
	ctx     context.Context
	members map[string]*member
}

// scope is one watch: a resource in a namespace ("" for cluster-scoped).
type scope struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// object is one applied object.
type object struct {
	scope
	name string
}

type member struct {
	config *rest.Config
	client metadata.Interface
	// works maps each tracked Work to the objects it applied; owners is
	// the reverse, since two Works may carry the same object.
	works  map[types.NamespacedName][]object
	owners map[object]map[types.NamespacedName]struct{}
	// watches counts, per scope, the objects in it with an owner.
	watches map[scope]*watch
}

type watch struct {
	objects int
	stop    chan struct{}
	// synced is the informer's HasSynced; failed is set by its error
	// handler. A watch that never listed (the identity's rights in the
	// namespace came after its first Work) is started afresh once an
	// object in it is applied, rather than waiting out the reflector's
	// backoff.
	synced func() bool
	failed atomic.Bool
}

// Start records the context watches run under and stops them all when it
// ends.
func (w *Watcher) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for name, m := range w.members {
		m.stopAll()
		delete(w.members, name)
	}
	w.ctx = nil
	return nil
}

// NeedLeaderElection: the leader alone applies Works.
func (w *Watcher) NeedLeaderElection() bool { return true }

// Track records the objects work has applied in member (those its status
// names), starting the watches they need and stopping those no
// object needs any more. Before Start, after it ended, or on a nil Watcher,
// it does nothing.
func (w *Watcher) Track(ctx context.Context, memberName string, work *workv1alpha1.Work) error {
	if w == nil {
		return nil
	}
	objects, applied := appliedObjects(work)
	key := types.NamespacedName{Namespace: work.Namespace, Name: work.Name}
	var cfg *rest.Config
	if len(objects) > 0 {
		var err error
		if cfg, err = w.Connections.WatchConfig(ctx, memberName); err != nil {
			return err
		}
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil {
		return nil
	}
	if w.members == nil {
		w.members = map[string]*member{}
	}
	m := w.members[memberName]
	if len(objects) == 0 {
		if m != nil {
			w.untrack(memberName, m, key)
		}
		return nil
	}
	if m == nil || m.config != cfg {
		client, err := metadata.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if m == nil {
			m = &member{works: map[types.NamespacedName][]object{}, owners: map[object]map[types.NamespacedName]struct{}{}, watches: map[scope]*watch{}}
			w.members[memberName] = m
		}
		m.stopAll()
		m.config, m.client = cfg, client
		for s, wt := range m.watches {
			w.run(memberName, m, s, wt)
		}
	}
	for _, o := range applied {
		if wt := m.watches[o.scope]; wt != nil && wt.failed.Load() && !wt.synced() {
			close(wt.stop)
			w.run(memberName, m, o.scope, wt)
		}
	}

	before := m.works[key]
	m.works[key] = objects
	for _, o := range objects {
		owners := m.owners[o]
		if owners == nil {
			owners = map[types.NamespacedName]struct{}{}
			m.owners[o] = owners
			wt := m.watches[o.scope]
			if wt == nil {
				wt = &watch{}
				m.watches[o.scope] = wt
				w.run(memberName, m, o.scope, wt)
			}
			wt.objects++
		}
		owners[key] = struct{}{}
	}
	kept := make(map[object]bool, len(objects))
	for _, o := range objects {
		kept[o] = true
	}
	for _, o := range before {
		if !kept[o] {
			m.release(o, key)
		}
	}
	return nil
}

// Forget drops work: its objects are watched no more unless another Work
// carries them.
func (w *Watcher) Forget(memberName string, work types.NamespacedName) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.members[memberName]; m != nil {
		w.untrack(memberName, m, work)
	}
}

// Watches is how many watches run on member (for tests and metrics).
func (w *Watcher) Watches(memberName string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m := w.members[memberName]; m != nil {
		return len(m.watches)
	}
	return 0
}

// untrack drops a Work's objects; w.mu is held.
func (w *Watcher) untrack(memberName string, m *member, key types.NamespacedName) {
	for _, o := range m.works[key] {
		m.release(o, key)
	}
	delete(m.works, key)
	if len(m.works) == 0 {
		m.stopAll()
		delete(w.members, memberName)
	}
}

// release drops key as an owner of o, and o's watch when nothing in its
// scope is owned any more.
func (m *member) release(o object, key types.NamespacedName) {
	owners := m.owners[o]
	delete(owners, key)
	if len(owners) > 0 {
		return
	}
	delete(m.owners, o)
	if wt := m.watches[o.scope]; wt != nil {
		wt.objects--
		if wt.objects <= 0 {
			close(wt.stop)
			delete(m.watches, o.scope)
		}
	}
}

func (m *member) stopAll() {
	for _, wt := range m.watches {
		if wt.stop != nil {
			close(wt.stop)
			wt.stop = nil
		}
	}
}

// run starts the watch of one scope into wt; closing wt.stop stops it.
// w.mu is held.
func (w *Watcher) run(memberName string, m *member, s scope, wt *watch) {
	stop := make(chan struct{})
	wt.stop = stop
	wt.failed.Store(false)
	informer := metadatainformer.NewFilteredMetadataInformer(m.client, s.gvr, s.namespace, 0, cache.Indexers{},
		func(o *metav1.ListOptions) {
			o.LabelSelector = workv1alpha1.ManagedByLabel + "=" + workv1alpha1.ManagedByValue
		}).Informer()
	// Only names and versions are needed: drop what makes metadata large.
	_ = informer.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(*metav1.PartialObjectMetadata); ok {
			o.ManagedFields, o.Annotations = nil, nil
		}
		return obj, nil
	})
	log := w.Log.WithValues("member", memberName, "resource", s.gvr.String(), "namespace", s.namespace)
	_ = informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		wt.failed.Store(true)
		log.V(1).Info("Watch of applied objects failed; retrying", "error", err.Error())
	})
	notify := func(obj any, edited bool) {
		o, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown)
			if !isTombstone {
				return
			}
			if o, ok = tombstone.Obj.(*metav1.PartialObjectMetadata); !ok {
				return
			}
		}
		w.changed(memberName, object{scope: s, name: o.Name}, edited)
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { notify(obj, false) },
		UpdateFunc: func(before, after any) {
			b, ok1 := before.(metav1.Object)
			a, ok2 := after.(metav1.Object)
			if ok1 && ok2 && b.GetResourceVersion() == a.GetResourceVersion() {
				return // a relist, not a change
			}
			notify(after, !ok1 || !ok2 || b.GetGeneration() != a.GetGeneration())
		},
		DeleteFunc: func(obj any) { notify(obj, true) },
	})
	ctxDone := w.ctx.Done()
	go func() {
		done := make(chan struct{})
		go func() {
			select {
			case <-stop:
			case <-ctxDone:
			}
			close(done)
		}()
		informer.Run(done)
	}()
	wt.synced = informer.HasSynced
}

// changed tells Changed about every Work that owns o.
func (w *Watcher) changed(memberName string, o object, edited bool) {
	w.mu.Lock()
	var works []types.NamespacedName
	if m := w.members[memberName]; m != nil {
		for key := range m.owners[o] {
			works = append(works, key)
		}
	}
	w.mu.Unlock()
	for _, key := range works {
		w.Changed(key, edited)
	}
}

// appliedObjects is what a Work's status names in the member: all of them —
// the objects it applied, and those whose apply failed there (a conflict
// with another manager, a rejection), watched too so that the Work is tried
// again as soon as the member's side changes — and the applied ones.
func appliedObjects(work *workv1alpha1.Work) (all, applied []object) {
	seen := map[object]bool{}
	for _, st := range work.Status.ManifestStatuses {
		id := st.Identifier
		if id.Resource == "" || id.Name == "" {
			continue
		}
		o := object{scope: scope{gvr: schema.GroupVersionResource{Group: id.Group, Version: id.Version, Resource: id.Resource}, namespace: id.Namespace}, name: id.Name}
		if !seen[o] {
			seen[o] = true
			all = append(all, o)
			if st.Applied {
				applied = append(applied, o)
			}
		}
	}
	return all, applied
}
