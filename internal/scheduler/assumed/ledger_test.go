package assumed

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// tenCPUs is one node with 10 CPU, observed at t0+observed.
func tenCPUs(observed time.Duration) *capacity.Model {
	return capacity.NewModel(&clusterv1alpha1.CapacityModel{
		ObservedTime: metav1.NewTime(t0.Add(observed)),
		NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourcePods: resource.MustParse("110")}}},
	})
}

var oneCPU = capacity.NewRequirement(&workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}})

func commit(l *Ledger, binding string, at time.Duration, base *capacity.Model, replicas, previous int64) {
	l.Commit(binding, "", oneCPU, t0.Add(at), []Assignment{{Member: "a", Replicas: replicas, Previous: previous, Base: base}})
}

func fitFor(l *Ledger, base *capacity.Model, exclude string) (int64, int64) {
	m, own := l.Adjusted("a", base, exclude)
	return m.Fit(oneCPU), own
}

func TestAdjustedHoldsBackOtherBindingsAndReportsTheOwnOnes(t *testing.T) {
	l := New(0)
	base := tenCPUs(0)
	commit(l, "b1", time.Minute, base, 4, 0)

	if fit, own := fitFor(l, base, "b2"); fit != 6 || own != 0 {
		t.Errorf("for another binding: fit %d, own %d; want 6, 0", fit, own)
	}
	if fit, own := fitFor(l, base, "b1"); fit != 10 || own != 4 {
		t.Errorf("for b1 itself: fit %d, own %d; want 10, 4", fit, own)
	}
}

func TestEntriesCountUntilAModelObservedAfterTheAssignment(t *testing.T) {
	tests := []struct {
		name     string
		grace    time.Duration
		observed time.Duration // of the newer model; the assignment is at 1m
		wantFit  int64
	}{
		{"model older than the assignment", 0, 30 * time.Second, 6},
		{"model observed at the assignment", 0, time.Minute, 6},
		{"model observed after the assignment", 0, 2 * time.Minute, 10},
		{"within the grace after the assignment", 5 * time.Minute, 2 * time.Minute, 6},
		{"after the grace", 5 * time.Minute, 7 * time.Minute, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.grace)
			commit(l, "b1", time.Minute, tenCPUs(0), 4, 0)
			if fit, _ := fitFor(l, tenCPUs(tt.observed), "other"); fit != tt.wantFit {
				t.Errorf("fit = %d, want %d", fit, tt.wantFit)
			}
		})
	}
}

func TestCommitRecordsOnlyReplicasTheEstimatorHasNotSeen(t *testing.T) {
	old, seen := tenCPUs(0), tenCPUs(10*time.Minute)
	tests := []struct {
		name        string
		steps       func(l *Ledger)
		wantPending int64
	}{
		{"first placement: all unseen", func(l *Ledger) { commit(l, "b", time.Minute, old, 8, 0) }, 8},
		{"scale-up before they are seen: all unseen", func(l *Ledger) {
			commit(l, "b", time.Minute, old, 8, 0)
			commit(l, "b", 2*time.Minute, old, 10, 8)
		}, 10},
		{"scale-up after they are seen: only the new ones", func(l *Ledger) {
			commit(l, "b", time.Minute, old, 8, 0)
			commit(l, "b", 11*time.Minute, seen, 10, 8)
		}, 2},
		{"scale-down: never more than held", func(l *Ledger) {
			commit(l, "b", time.Minute, old, 10, 0)
			commit(l, "b", 2*time.Minute, old, 4, 10)
		}, 4},
		{"moved away: forgotten", func(l *Ledger) {
			commit(l, "b", time.Minute, old, 10, 0)
			l.Commit("b", "", oneCPU, t0.Add(2*time.Minute), nil)
		}, 0},
		{"forgotten", func(l *Ledger) {
			commit(l, "b", time.Minute, old, 10, 0)
			l.Forget("b")
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(0)
			tt.steps(l)
			var pending int64
			for _, e := range l.Entries("a") {
				pending += e.Replicas
			}
			if pending != tt.wantPending {
				t.Errorf("pending = %d (%+v), want %d", pending, l.Entries("a"), tt.wantPending)
			}
		})
	}
}

func TestCachedModelEqualsOneBuiltFromScratch(t *testing.T) {
	l := New(0)
	base := tenCPUs(0)
	twoCPU := capacity.NewRequirement(&workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}})
	commit(l, "b1", time.Minute, base, 3, 0)
	if fit, _ := fitFor(l, base, ""); fit != 7 { // fills the cache
		t.Fatalf("fit after b1 = %d, want 7", fit)
	}
	l.Commit("b2", "", twoCPU, t0.Add(time.Minute), []Assignment{{Member: "a", Replicas: 2, Base: base}}) // extends the cache
	cached, _ := l.Adjusted("a", base, "")
	fresh, _ := base.Place(oneCPU, 3)
	fresh, _ = fresh.Place(twoCPU, 2)
	if cached.Fit(oneCPU) != fresh.Fit(oneCPU) || cached.Fit(twoCPU) != fresh.Fit(twoCPU) {
		t.Errorf("cached fits %d/%d, fresh %d/%d", cached.Fit(oneCPU), cached.Fit(twoCPU), fresh.Fit(oneCPU), fresh.Fit(twoCPU))
	}
}

func TestPruneDropsSeenEntriesAndMembersThatLeft(t *testing.T) {
	l := New(0)
	commit(l, "b1", time.Minute, tenCPUs(0), 4, 0)
	l.Commit("b2", "", oneCPU, t0.Add(time.Minute), []Assignment{{Member: "gone", Replicas: 1, Base: tenCPUs(0)}})
	l.Prune([]string{"a"}, []*capacity.Model{tenCPUs(2 * time.Minute)})
	if got := l.Entries("a"); len(got) != 0 {
		t.Errorf("a keeps %+v after a newer model", got)
	}
	if got := l.Entries("gone"); len(got) != 0 {
		t.Errorf("a member that left keeps %+v", got)
	}
}

func TestLedgerIsSafeForConcurrentUse(t *testing.T) {
	l := New(0)
	base := tenCPUs(0)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				binding := fmt.Sprintf("b%d-%d", g, i%5)
				commit(l, binding, time.Minute, base, int64(i%3), 0)
				l.Adjusted("a", base, binding)
				if i%7 == 0 {
					l.Forget(binding)
				}
			}
		})
	}
	wg.Wait()
	var pending int64
	for _, e := range l.Entries("a") {
		pending += e.Replicas
	}
	if fit, _ := fitFor(l, base, ""); fit != max(0, 10-pending) {
		t.Errorf("fit %d with %d pending, want %d", fit, pending, max(0, 10-pending))
	}
}

// A hold whose Pods never show ends maxHold after the assignment even when
// the member's model never changes (its estimator publishes only on change
// or at its heartbeat); the cached adjusted model goes stale with it.
func TestMaxHoldEndsAHoldWhenTheModelDoesNotChange(t *testing.T) {
	now := t0.Add(time.Minute)
	l := New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return now })
	base := tenCPUs(0) // never republished
	commit(l, "b1", time.Minute, base, 4, 0)
	if fit, _ := fitFor(l, base, "other"); fit != 6 {
		t.Fatalf("fit at the assignment = %d, want 6", fit)
	}
	now = t0.Add(time.Minute + 89*time.Second)
	if fit, _ := fitFor(l, base, "other"); fit != 6 {
		t.Fatalf("fit just before maxHold = %d, want 6", fit)
	}
	now = t0.Add(time.Minute + 90*time.Second)
	if fit, _ := fitFor(l, base, "other"); fit != 10 {
		t.Fatalf("fit at maxHold = %d, want 10 (the cached model must not outlive the hold)", fit)
	}
	// Without a bound the same hold waits for a newer model.
	l = New(30 * time.Second)
	commit(l, "b1", time.Minute, base, 4, 0)
	if fit, _ := fitFor(l, base, "other"); fit != 6 {
		t.Fatalf("unbounded: fit = %d, want 6", fit)
	}
}

// The cached model follows the ends of holds to the second
// (holdResolution): a hold counts at most a second past maxHold, and an
// entry read exactly (its own binding's) is not held by the rounding.
func TestAHoldEndsWithinASecondOfMaxHold(t *testing.T) {
	now := t0.Add(time.Minute)
	l := New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return now })
	base := tenCPUs(0) // never republished
	l.Commit("b1", "", oneCPU, t0.Add(time.Minute+100*time.Millisecond), []Assignment{{Member: "a", Replicas: 4, Base: base}})
	if fit, _ := fitFor(l, base, "other"); fit != 6 {
		t.Fatalf("fit at the assignment = %d, want 6", fit)
	}
	now = t0.Add(time.Minute + 90*time.Second + 100*time.Millisecond)
	if _, own := fitFor(l, base, "b1"); own != 0 {
		t.Fatalf("b1's own replicas at maxHold: %d held, want 0", own)
	}
	if fit, _ := fitFor(l, base, "other"); fit != 6 && fit != 10 {
		t.Fatalf("fit at maxHold = %d, want 6 (still cached) or 10", fit)
	}
	now = t0.Add(time.Minute + 91*time.Second)
	if fit, _ := fitFor(l, base, "other"); fit != 10 {
		t.Fatalf("fit a second past maxHold = %d, want 10", fit)
	}
}

func TestRestoreHoldsWhatTheModelHasNotSeenAndSkipsWhatNoLongerCounts(t *testing.T) {
	l := New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return t0.Add(2 * time.Minute) })
	base := tenCPUs(0)
	// Assigned at 1m30s, 30 s before now, on a model from t0: 3 of 4 unseen.
	l.Restore("recent", "", oneCPU, t0.Add(90*time.Second), []Assignment{{Member: "a", Replicas: 4, Previous: 1, Base: base}})
	// Assigned at t0-1m: past the 90 s bound now, holds nothing.
	l.Restore("old", "", oneCPU, t0.Add(-time.Minute), []Assignment{{Member: "a", Replicas: 5, Previous: 0, Base: base}})
	// Nothing unseen: nothing held.
	l.Restore("seen", "", oneCPU, t0.Add(90*time.Second), []Assignment{{Member: "a", Replicas: 2, Previous: 2, Base: base}})

	if fit, own := fitFor(l, base, "other"); fit != 7 || own != 0 {
		t.Errorf("for another binding: fit %d, own %d; want 7 (10 less the 3 restored), 0", fit, own)
	}
	if fit, own := fitFor(l, base, "recent"); fit != 10 || own != 3 {
		t.Errorf("for the restored binding: fit %d, own %d; want 10, 3", fit, own)
	}
	if got := len(l.Entries("a")); got != 1 {
		t.Errorf("entries: %d, want only the recent binding's", got)
	}
	// A newer model does not release it while its Work is not known to be
	// in the member; once applied, a model observed past the application
	// and its grace does, as for a committed entry.
	if fit, _ := fitFor(l, tenCPUs(2*time.Minute+time.Second), "other"); fit != 7 {
		t.Errorf("after a newer model, its Work not known applied: fit %d, want 7", fit)
	}
	l.Decided("recent", 3)
	l.Applied("recent", "a", 3, t0.Add(90*time.Second))
	if fit, _ := fitFor(l, tenCPUs(2*time.Minute+2*time.Second), "other"); fit != 10 {
		t.Errorf("after a model observed past the application and the grace: fit %d, want 10", fit)
	}
}

// The grace of a hold counts from the moment its member applied the Work
// carrying it, not from the decision: a hub slow to get the Work there
// must not let the capacity be handed out twice.
func TestAHoldWaitsForItsWorkToBeAppliedThenTheGrace(t *testing.T) {
	now := t0
	l := New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return now })
	l.Commit("b1", "ns", oneCPU, t0, []Assignment{{Member: "a", Replicas: 4, Base: tenCPUs(0)}})
	l.Decided("b1", 2)

	now = t0.Add(45 * time.Second)
	if fit, _ := fitFor(l, tenCPUs(40*time.Second), "other"); fit != 6 {
		t.Fatalf("a model past the grace, the Work not applied yet: fit %d, want 6", fit)
	}
	l.Applied("b1", "a", 1, now)
	if fit, _ := fitFor(l, tenCPUs(44*time.Second), "other"); fit != 6 {
		t.Fatalf("an older generation applied: fit %d, want 6", fit)
	}
	l.Applied("b1", "a", 2, now)
	now = t0.Add(70 * time.Second)
	if fit, _ := fitFor(l, tenCPUs(70*time.Second), "other"); fit != 6 {
		t.Fatalf("within the grace of the application: fit %d, want 6", fit)
	}
	l.Applied("b1", "a", 3, now) // a later report moves nothing
	now = t0.Add(80 * time.Second)
	if fit, _ := fitFor(l, tenCPUs(76*time.Second), "other"); fit != 10 {
		t.Fatalf("a model observed past the application and its grace: fit %d, want 10", fit)
	}

	// A Work never applied is held until maxHold, whatever the models.
	now = t0.Add(100 * time.Second)
	l.Commit("b2", "ns", oneCPU, now, []Assignment{{Member: "a", Replicas: 3, Base: tenCPUs(99 * time.Second)}})
	l.Decided("b2", 7)
	now = t0.Add(189 * time.Second)
	if fit, _ := fitFor(l, tenCPUs(188*time.Second), "other"); fit != 7 {
		t.Fatalf("before maxHold, never applied: fit %d, want 7", fit)
	}
	now = t0.Add(191 * time.Second)
	if fit, _ := fitFor(l, tenCPUs(190*time.Second), "other"); fit != 10 {
		t.Fatalf("past maxHold, never applied: fit %d, want 10", fit)
	}
}

// A decision that adds nothing to a member keeps what is known of the Work
// carrying its held replicas; one that adds replicas waits for the new Work.
func TestARedecisionKeepsTheApplicationOnlyWhenItAddsNothing(t *testing.T) {
	now := t0
	l := New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return now })
	l.Commit("b1", "ns", oneCPU, t0, []Assignment{{Member: "a", Replicas: 4, Base: tenCPUs(0)}})
	l.Decided("b1", 2)
	l.Applied("b1", "a", 2, t0.Add(time.Second))

	now = t0.Add(10 * time.Second)
	l.Commit("b1", "ns", oneCPU, now, []Assignment{{Member: "a", Replicas: 4, Previous: 4, Base: tenCPUs(5 * time.Second)}})
	l.Decided("b1", 3)
	if e := l.Entries("a"); len(e) != 1 || e[0].Generation != 2 || !e[0].AppliedAt.Equal(t0.Add(time.Second)) {
		t.Fatalf("re-decided adding nothing: entries %+v, want generation 2 applied at 1s", e)
	}

	l.Commit("b1", "ns", oneCPU, now, []Assignment{{Member: "a", Replicas: 6, Previous: 4, Base: tenCPUs(5 * time.Second)}})
	l.Decided("b1", 4)
	if e := l.Entries("a"); len(e) != 1 || e[0].Replicas != 6 || e[0].Generation != 4 || !e[0].AppliedAt.IsZero() {
		t.Fatalf("re-decided adding 2: entries %+v, want 6 held at generation 4, not applied", e)
	}
	if fit, _ := fitFor(l, tenCPUs(50*time.Second), "other"); fit != 4 {
		t.Fatalf("a model past the first application's grace: fit %d, want 4", fit)
	}
}
