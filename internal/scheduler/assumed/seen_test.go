package assumed

import (
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// member is a model of one 10-CPU node observed at t0+observed, with Pods
// bound per namespace, each taking 1 CPU.
func member(observed time.Duration, bound map[string]int32) *capacity.Model {
	var used int32
	for _, n := range bound {
		used += n
	}
	return capacity.NewModel(&clusterv1alpha1.CapacityModel{
		ObservedTime: metav1.NewTime(t0.Add(observed)),
		BoundPods:    bound,
		NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{
			corev1.ResourceCPU:  resource.MustParse(strconv.Itoa(int(10 - used))),
			corev1.ResourcePods: resource.MustParse("110")}}},
	})
}

func place(l *Ledger, binding, namespace string, at time.Duration, base *capacity.Model, replicas, previous int64) {
	l.Commit(binding, namespace, oneCPU, t0.Add(at), []Assignment{{Member: "a", Replicas: replicas, Previous: previous, Base: base}})
}

// A replica is charged once: while its Pod is unseen by the hold, then by
// the model. The grace (5 minutes here) only matters for Pods that never
// show up.
func TestHeldCapacityIsReleasedWhenTheModelShowsThePods(t *testing.T) {
	const grace = 5 * time.Minute
	empty := member(0, nil)
	tests := []struct {
		name  string
		steps func(l *Ledger)
		// now is the model the next decision reads.
		now *capacity.Model
		// wantFit is the 1-CPU replicas another binding may still place.
		wantFit int64
	}{
		{"no Pod seen yet: all 4 held", func(l *Ledger) { place(l, "shop/web", "shop", time.Minute, empty, 4, 0) },
			member(time.Minute+10*time.Second, nil), 6},
		{"all 4 Pods seen: nothing held, the model alone charges them", func(l *Ledger) { place(l, "shop/web", "shop", time.Minute, empty, 4, 0) },
			member(time.Minute+10*time.Second, map[string]int32{"shop": 4}), 6},
		{"2 of 4 seen: the 2 unseen stay held", func(l *Ledger) { place(l, "shop/web", "shop", time.Minute, empty, 4, 0) },
			member(time.Minute+10*time.Second, map[string]int32{"shop": 2}), 6},
		{"Pods of another namespace release nothing", func(l *Ledger) { place(l, "shop/web", "shop", time.Minute, empty, 4, 0) },
			member(time.Minute+10*time.Second, map[string]int32{"other": 4}), 2},
		{"two bindings in a namespace: 2 of their 5 seen, 3 held", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, empty, 2, 0)
			place(l, "shop/api", "shop", time.Minute, empty, 3, 0)
		}, member(time.Minute+10*time.Second, map[string]int32{"shop": 2}), 5},
		{"two bindings in a namespace: all 5 seen", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, empty, 2, 0)
			place(l, "shop/api", "shop", time.Minute, empty, 3, 0)
		}, member(time.Minute+10*time.Second, map[string]int32{"shop": 5}), 5},
		{"a Pod deleted meanwhile: the hold stays until the grace", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, member(0, map[string]int32{"shop": 3}), 2, 0)
		}, member(time.Minute+10*time.Second, map[string]int32{"shop": 4}), 5},
		{"a Pod deleted meanwhile, after the grace: released", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, member(0, map[string]int32{"shop": 3}), 2, 0)
		}, member(time.Minute+grace+time.Second, map[string]int32{"shop": 4}), 6},
		{"scale-up while 2 of 3 are seen: 1 old and 2 new held", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, empty, 3, 0)
			place(l, "shop/web", "shop", 2*time.Minute, member(time.Minute+10*time.Second, map[string]int32{"shop": 2}), 5, 3)
		}, member(2*time.Minute+10*time.Second, map[string]int32{"shop": 2}), 5},
		{"scale-up, then all 5 seen", func(l *Ledger) {
			place(l, "shop/web", "shop", time.Minute, empty, 3, 0)
			place(l, "shop/web", "shop", 2*time.Minute, member(time.Minute+10*time.Second, map[string]int32{"shop": 2}), 5, 3)
		}, member(2*time.Minute+10*time.Second, map[string]int32{"shop": 5}), 5},
		{"cluster-scoped template: only the grace releases", func(l *Ledger) { place(l, "crb", "", time.Minute, empty, 4, 0) },
			member(time.Minute+10*time.Second, map[string]int32{"shop": 4}), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(grace)
			tt.steps(l)
			if fit, _ := fitFor(l, tt.now, "someone/else"); fit != tt.wantFit {
				t.Errorf("fit = %d, want %d (entries %+v)", fit, tt.wantFit, l.Entries("a"))
			}
			// Pruning with the same model keeps exactly what the fit held.
			l.Prune([]string{"a"}, []*capacity.Model{tt.now})
			if fit, _ := fitFor(l, tt.now, "someone/else"); fit != tt.wantFit {
				t.Errorf("after prune: fit = %d, want %d (entries %+v)", fit, tt.wantFit, l.Entries("a"))
			}
		})
	}
}

func TestOwnUnseenReplicasAreReportedAsHeld(t *testing.T) {
	l := New(5 * time.Minute)
	place(l, "shop/web", "shop", time.Minute, member(0, nil), 4, 0)
	now := member(time.Minute+10*time.Second, map[string]int32{"shop": 3})
	if _, own := l.Adjusted("a", now, "shop/web"); own != 1 {
		t.Errorf("own unseen = %d, want 1 of 4 (3 seen)", own)
	}
}

func TestPruneDropsEntriesTheModelHasSeenWhole(t *testing.T) {
	l := New(5 * time.Minute)
	place(l, "shop/web", "shop", time.Minute, member(0, nil), 2, 0)
	place(l, "shop/api", "shop", time.Minute, member(0, nil), 2, 0)
	l.Prune([]string{"a"}, []*capacity.Model{member(time.Minute+5*time.Second, map[string]int32{"shop": 3})})
	got := l.Entries("a")
	if len(got) != 1 || got[0].Binding != "shop/api" {
		t.Errorf("entries after 3 of 4 seen = %+v, want shop/api's alone", got)
	}
}
