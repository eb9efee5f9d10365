package scheduler_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// BenchmarkScheduleABurstPastMaxHold is one decision in a long burst of new
// bindings (one replica of 10m CPU) Duplicated over three members whose capacity models never change
// (an estimator that publishes only at its heartbeat, or none at all, as in
// BenchmarkManagerMemory): the manager's ledger (grace 30 s, max hold 90 s),
// ten decisions a second on the scheduler's clock. Past the first 90 s the
// oldest hold ends with nearly every decision while ~900 are held on each
// member; warmed up that far before the measured decisions.
func BenchmarkScheduleABurstPastMaxHold(b *testing.B) {
	const step = 100 * time.Millisecond
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	ledger := assumed.New(30*time.Second).WithMaxHold(90*time.Second, clock)
	s := scheduler.New(scheduler.WithLedger(ledger), scheduler.WithClock(clock))
	snap := st.Snapshot(b, st.BenchFleet(3)...)
	n := 0
	decide := func() {
		in := benchBinding(fmt.Sprintf("bench/web-%06d", n), duplicated())
		in.Replicas = 1
		in.Requirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}}
		if _, err := s.Schedule(snap, in); err != nil {
			b.Fatalf("decision %d: %v", n, err)
		}
		n++
		now = now.Add(step)
	}
	for range 1000 {
		decide()
	}
	b.ReportAllocs()
	cpu := startCPUClock()
	for b.Loop() {
		decide()
	}
	cpu.report(b, b.N)
}
