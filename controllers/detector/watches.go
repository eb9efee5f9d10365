package detector

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// kindWatches is the set of template kinds being watched. Each controller
// that reacts to templates registers a sink; Ensure starts a watch of a kind
// on every sink, once.
type kindWatches struct {
	mu      sync.Mutex
	sinks   []kindSink
	started map[sinkKind]bool
}

// kindSink starts a controller's watch of one kind of template.
type kindSink struct {
	name  string
	watch func(schema.GroupVersionKind) error
}

type sinkKind struct {
	sink string
	gvk  schema.GroupVersionKind
}

func (w *kindWatches) addSink(name string, watch func(schema.GroupVersionKind) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sinks = append(w.sinks, kindSink{name: name, watch: watch})
}

// Ensure watches templates of gvk in every registered controller.
func (w *kindWatches) Ensure(gvk schema.GroupVersionKind) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started == nil {
		w.started = map[sinkKind]bool{}
	}
	for _, s := range w.sinks {
		key := sinkKind{sink: s.name, gvk: gvk}
		if w.started[key] {
			continue
		}
		if err := s.watch(gvk); err != nil {
			return fmt.Errorf("watch %s templates for %s: %w", gvk, s.name, err)
		}
		w.started[key] = true
	}
	return nil
}

// Kinds lists the kinds watched by every sink.
func (w *kindWatches) Kinds() []schema.GroupVersionKind {
	w.mu.Lock()
	defer w.mu.Unlock()
	set := map[schema.GroupVersionKind]bool{}
	for k := range w.started {
		set[k.gvk] = true
	}
	return slices.SortedFunc(maps.Keys(set), func(a, b schema.GroupVersionKind) int {
		return strings.Compare(a.String(), b.String())
	})
}

// metadataOf is an empty metadata-only object of a kind, for watches and lists.
func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

func metadataListOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadataList {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return l
}

// templateChanged passes the template events that can change a claim or a
// binding: creation, deletion, and updates of what the template asks for.
// For kinds that count generations, an update counts when the generation,
// labels, annotations (members receive them, and most kinds do not count
// them as a generation) or deletion timestamp change, so that the hub's
// own controllers writing a template's status (a Deployment's, say) do not
// wake the detector; kinds without generations (ConfigMap, Secret, …)
// count every update. An annotation the hub's controllers write
// (deployment.kubernetes.io/revision) wakes it for nothing: the binding
// follows the template's content as members receive it, which that
// annotation is not part of.
func templateChanged() predicate.TypedPredicate[*metav1.PartialObjectMetadata] {
	return predicate.TypedFuncs[*metav1.PartialObjectMetadata]{
		UpdateFunc: func(e event.TypedUpdateEvent[*metav1.PartialObjectMetadata]) bool {
			old, cur := e.ObjectOld, e.ObjectNew
			if old.GetResourceVersion() == cur.GetResourceVersion() {
				return false // a resync
			}
			if cur.GetGeneration() != 0 && firstClaim(old, cur) {
				return false
			}
			return cur.GetGeneration() == 0 ||
				old.GetGeneration() != cur.GetGeneration() ||
				!maps.Equal(old.GetLabels(), cur.GetLabels()) ||
				!maps.Equal(old.GetAnnotations(), cur.GetAnnotations()) ||
				!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp())
		},
	}
}

// firstClaim says whether an update only records a first claim: the
// detector's own write, made in the reconcile that also wrote the
// binding, whose echo would read the template and its binding again for
// nothing (one reconcile in two of a burst of new templates). A Deployment
// counts a change of its annotations (the claim's among them) as a new
// generation: one more generation is the claim's own, when nothing but
// the claim's labels and annotations changed. Any other write is an event
// of its own.
func firstClaim(old, cur metav1.Object) bool {
	if claimOf(old) != nil || claimOf(cur) == nil ||
		(cur.GetGeneration() != old.GetGeneration() && cur.GetGeneration() != old.GetGeneration()+1) ||
		!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp()) {
		return false
	}
	without := func(m map[string]string, keys []string) map[string]string {
		out := maps.Clone(m)
		for _, k := range keys {
			delete(out, k)
		}
		return out
	}
	return maps.Equal(without(old.GetLabels(), claimLabelKeys), without(cur.GetLabels(), claimLabelKeys)) &&
		maps.Equal(without(old.GetAnnotations(), claimAnnotationKeys), without(cur.GetAnnotations(), claimAnnotationKeys))
}
