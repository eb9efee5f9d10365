package applier

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func workOfGeneration(uid string, generation int64) *workv1alpha1.Work {
	return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-es-edge-1", Name: "web", UID: types.UID(uid), Generation: generation}}
}

func TestAnUnchangedWorkIsFreshUntilDriftRepairIsDue(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// applied is what the executor recorded at t0; nil for nothing.
		applied *workv1alpha1.Work
		inSync  bool
		// then the Work as seen at t0+elapsed.
		seen    *workv1alpha1.Work
		elapsed time.Duration
		want    time.Duration
	}{
		{name: "never applied", seen: workOfGeneration("u1", 3), want: 0},
		{name: "same generation, just applied", applied: workOfGeneration("u1", 3), inSync: true, seen: workOfGeneration("u1", 3), elapsed: 0, want: time.Minute},
		{name: "same generation, 45s later (a hub outage, a reconnect)", applied: workOfGeneration("u1", 3), inSync: true, seen: workOfGeneration("u1", 3), elapsed: 45 * time.Second, want: 15 * time.Second},
		{name: "same generation, drift repair due", applied: workOfGeneration("u1", 3), inSync: true, seen: workOfGeneration("u1", 3), elapsed: time.Minute, want: 0},
		{name: "new generation", applied: workOfGeneration("u1", 3), inSync: true, seen: workOfGeneration("u1", 4), elapsed: time.Second, want: 0},
		{name: "same name, recreated", applied: workOfGeneration("u1", 3), inSync: true, seen: workOfGeneration("u2", 3), elapsed: time.Second, want: 0},
		{name: "last apply left something out", applied: workOfGeneration("u1", 3), inSync: false, seen: workOfGeneration("u1", 3), elapsed: time.Second, want: 0},
	}
	for _, tt := range tests {
		a := NewApplied(time.Minute)
		if tt.applied != nil {
			a.Record(tt.applied, t0, tt.inSync)
		}
		if got := a.FreshFor(tt.seen, t0.Add(tt.elapsed)); got != tt.want {
			t.Errorf("%s: freshFor = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestAFailedApplyForgetsWhatWasAppliedBefore(t *testing.T) {
	t0 := time.Now()
	a := NewApplied(time.Minute)
	a.Record(workOfGeneration("u1", 3), t0, true)
	a.Record(workOfGeneration("u1", 3), t0.Add(time.Second), false)
	if got := a.FreshFor(workOfGeneration("u1", 3), t0.Add(2*time.Second)); got != 0 {
		t.Errorf("freshFor = %s after a failed apply, want 0 (apply again)", got)
	}
}

func TestAForgottenWorkIsAppliedAgain(t *testing.T) {
	t0 := time.Now()
	a := NewApplied(time.Minute)
	w := workOfGeneration("u1", 3)
	a.Record(w, t0, true)
	a.Forget(types.NamespacedName{Namespace: w.Namespace, Name: w.Name})
	if got := a.FreshFor(w, t0); got != 0 {
		t.Errorf("freshFor = %s after forget, want 0", got)
	}
}
