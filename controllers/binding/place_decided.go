package binding

import (
	"encoding/json"
	"hash/fnv"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// decidedInputs remembers, per binding, what its last successful decision
// read (the placement inputs and the placement it wrote) and the member
// epoch it was made at. A new generation of the binding with the same
// inputs, at the same epoch, would be decided the same way: it is only
// observed (status.schedulerObservedGeneration). A restart forgets; the
// first generation after it is decided again, as before the record.
type decidedInputs struct {
	mu sync.Mutex
	m  map[string]decidedInput
}

type decidedInput struct {
	uid    types.UID
	inputs uint64
	epoch  uint64
}

func (d *decidedInputs) record(key string, b workv1alpha1.Binding, epoch uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]decidedInput{}
	}
	f, ok := fingerprint(b)
	if !ok {
		delete(d.m, key)
		return
	}
	d.m[key] = decidedInput{uid: b.GetUID(), inputs: f, epoch: epoch}
}

// unchanged says whether the binding's inputs and placement are those of
// its last decision, made at epoch.
func (d *decidedInputs) unchanged(key string, b workv1alpha1.Binding, epoch uint64) bool {
	d.mu.Lock()
	last, ok := d.m[key]
	d.mu.Unlock()
	if !ok || last.uid != b.GetUID() || last.epoch != epoch {
		return false
	}
	f, ok := fingerprint(b)
	return ok && f == last.inputs
}

func (d *decidedInputs) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, key)
}

// fingerprint hashes what a decision reads from a binding's spec and the
// placement it holds.
func fingerprint(b workv1alpha1.Binding) (uint64, bool) {
	raw, err := json.Marshal(struct {
		Inputs   placementInputs
		Clusters []workv1alpha1.TargetCluster
	}{inputsOf(b), b.BindingSpec().Clusters})
	if err != nil {
		return 0, false
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return h.Sum64(), true
}

// observeGeneration records that the decision in force covers generation:
// status.schedulerObservedGeneration and the Scheduled condition's.
func observeGeneration(status *workv1alpha1.ResourceBindingStatus, generation int64) {
	status.SchedulerObservedGeneration = generation
	for i := range status.Conditions {
		if status.Conditions[i].Type == workv1alpha1.ConditionScheduled {
			status.Conditions[i].ObservedGeneration = generation
		}
	}
}
