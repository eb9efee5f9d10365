package binding

import (
	"context"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util/conditions"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
)

// restoreHolds rebuilds the assumed-capacity ledger from the bindings when
// this process starts deciding — after a leader change, the previous
// leader's holds went with it, and the replicas it placed just before are
// not in the members' models yet. Without them, the first decisions of the
// new leader would hand out the same capacity again.
//
// A binding's placement and status.lastScheduledTime say what it holds and
// since when; the members' models say how many Pods of each namespace they
// have seen. What a namespace's bindings place on a member beyond those
// Pods is unseen, and is held against the most recently scheduled bindings
// of that namespace first. The ledger itself drops holds that no longer
// count (a model observed past the grace, or the hold past its bound).
func restoreHolds(ledger *assumed.Ledger, snap *scheduler.Snapshot, bindings []workv1alpha1.Binding) {
	models := make(map[string]*capacity.Model, len(snap.Names()))
	for i, name := range snap.Names() {
		models[name] = snap.Models()[i]
	}

	// placed is what a namespace's bindings place on a member, seen or not.
	type slot struct{ member, namespace string }
	placed := map[slot]int64{}
	var recent []workv1alpha1.Binding
	for _, b := range bindings {
		spec := b.BindingSpec()
		for _, c := range spec.Clusters {
			placed[slot{c.Name, spec.Resource.Namespace}] += int64(c.Replicas)
		}
		if b.BindingStatus().LastScheduledTime != nil && len(spec.Clusters) > 0 && spec.Replicas > 0 {
			recent = append(recent, b)
		}
	}
	// unseen is what of placed the member's model does not show yet.
	unseen := func(s slot) int64 {
		m := models[s.member]
		if m == nil {
			return 0
		}
		if s.namespace == "" {
			// Pods of cluster-scoped templates are not counted by
			// namespace: hold all of it, as Commit does.
			return placed[s]
		}
		return max(0, placed[s]-m.BoundPods(s.namespace))
	}
	left := map[slot]int64{}
	for s := range placed {
		left[s] = unseen(s)
	}

	sort.SliceStable(recent, func(i, j int) bool {
		return recent[i].BindingStatus().LastScheduledTime.After(recent[j].BindingStatus().LastScheduledTime.Time)
	})
	for _, b := range recent {
		spec := b.BindingSpec()
		var assignments []assumed.Assignment
		for _, c := range spec.Clusters {
			s := slot{c.Name, spec.Resource.Namespace}
			held := min(int64(c.Replicas), left[s])
			if held <= 0 {
				continue
			}
			left[s] -= held
			assignments = append(assignments, assumed.Assignment{
				Member: c.Name, Replicas: int64(c.Replicas), Previous: int64(c.Replicas) - held, Base: models[c.Name],
			})
		}
		if len(assignments) == 0 {
			continue
		}
		at := b.BindingStatus().LastScheduledTime.Time
		ledger.Restore(placementKey(b), spec.Resource.Namespace, capacity.NewRequirement(spec.ReplicaRequirements), at, assignments)
		// The placement is the binding's as it stands; what its members
		// applied of it, the earliest they could have: at the decision.
		ledger.Decided(placementKey(b), b.GetGeneration())
		reportApplied(ledger, b, b.BindingStatus().AggregatedStatus, at)
	}
}

// reportApplied tells the ledger which members have applied b's Works and
// the binding generation they were rendered from (the Rendered condition's),
// at `at`: the grace of the capacity held for them counts from then.
// Nothing is told before the render phase has rendered the binding whole.
func reportApplied(ledger *assumed.Ledger, b workv1alpha1.Binding, items []workv1alpha1.AggregatedStatusItem, at time.Time) {
	c := conditions.Get(b, workv1alpha1.ConditionRendered)
	if ledger == nil || c == nil || c.Status != metav1.ConditionTrue {
		return
	}
	key := placementKey(b)
	for _, item := range items {
		if item.Applied {
			ledger.Applied(key, item.ClusterName, c.ObservedGeneration, at)
		}
	}
}

// listBindings reads every ResourceBinding and ClusterResourceBinding.
func (r *Placer) listBindings(ctx context.Context) ([]workv1alpha1.Binding, error) {
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := r.Client.List(ctx, rbs); err != nil {
		return nil, err
	}
	crbs := &workv1alpha1.ClusterResourceBindingList{}
	if err := r.Client.List(ctx, crbs); err != nil {
		return nil, err
	}
	out := make([]workv1alpha1.Binding, 0, len(rbs.Items)+len(crbs.Items))
	for i := range rbs.Items {
		out = append(out, &rbs.Items[i])
	}
	for i := range crbs.Items {
		out = append(out, &crbs.Items[i])
	}
	return out, nil
}

// restoreOnce runs restoreHolds before this process's first decision; a
// failure to list is retried by the next decision.
func (r *Placer) restoreOnce(ctx context.Context, snap *scheduler.Snapshot) error {
	if r.restored.Load() {
		return nil
	}
	r.restore.Lock()
	defer r.restore.Unlock()
	if r.restored.Load() {
		return nil
	}
	start := time.Now()
	bindings, err := r.listBindings(ctx)
	if err != nil {
		return err
	}
	restoreHolds(r.Scheduler.Ledger(), snap, bindings)
	r.restored.Store(true)
	held := 0
	for _, name := range snap.Names() {
		held += len(r.Scheduler.Ledger().Entries(name))
	}
	ctrl.LoggerFrom(ctx).Info("assumed capacity restored from bindings", "bindings", len(bindings), "holds", held, "took", time.Since(start).String())
	return nil
}
