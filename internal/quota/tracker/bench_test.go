package tracker_test

import (
	"fmt"
	"testing"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// benchTracker has one namespace with a quota and n placed bindings.
func benchTracker(n int) *tracker.Tracker {
	tr := synced()
	tr.SetQuota("tenant", "team", list("cpu", "1000000", "requests.memory", "1000Ti", "pods", "10000000"))
	req := &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", "250m", "memory", "512Mi")}
	for i := range n {
		tr.ObserveBinding(fmt.Sprintf("tenant/b%05d", i), "tenant", deployment(req, on("m1", 4)), false)
	}
	return tr
}

// BenchmarkCheckPlacement is one scheduler question against a namespace of
// 10,000 bindings: it does not grow with the bindings (usage is summed as
// it changes, not per question).
func BenchmarkCheckPlacement(b *testing.B) {
	tr := benchTracker(10_000)
	p := placement("new", cpuEach("1"), nil, on("m1", 8))
	b.ReportAllocs()
	for b.Loop() {
		if err := tr.CheckPlacement(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObserveBinding is one binding event (a scale) in that namespace.
func BenchmarkObserveBinding(b *testing.B) {
	tr := benchTracker(10_000)
	req := &workv1alpha1.ReplicaRequirements{ResourceRequest: list("cpu", "250m", "memory", "512Mi")}
	w := []quota.Workload{deployment(req, on("m1", 4)), deployment(req, on("m1", 5))}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tr.ObserveBinding("tenant/b00042", "tenant", w[i%2], false)
		i++
	}
}
