package binding

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

func cpuRequirement(cpu string) *capacity.Requirement {
	return capacity.NewRequirement(&workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}})
}

func modelOf(free string) *capacity.Model {
	m := st.Member("x", st.Nodes(1, "cpu", free))
	return capacity.NewModel(m.Status.CapacityModel)
}

// A member's new capacity queues the short bindings whose replicas now all
// fit there, and the failed bindings it now holds more of; nothing else.
func TestACapacityReportQueuesOnlyTheBindingsItMayComplete(t *testing.T) {
	var w waitingBindings
	short := func(need int64, members ...string) *waitingEntry {
		return &waitingEntry{reason: workv1alpha1.BindingReasonPartiallyScheduled, short: members, req: cpuRequirement("1"), need: need, capacityHelps: true}
	}
	w.set("ns/two-on-m1", short(2, "m1"))
	w.set("ns/four-on-m1", short(4, "m1"))
	w.set("ns/two-on-m2", short(2, "m2"))
	w.set("cluster-wide", short(2, "m1"))
	w.set("ns/unschedulable", &waitingEntry{reason: workv1alpha1.BindingReasonUnschedulable, req: cpuRequirement("1"), need: 10, capacityHelps: true})
	w.set("ns/over-quota", &waitingEntry{reason: workv1alpha1.BindingReasonQuotaExceeded, req: cpuRequirement("1"), need: 1})
	w.set("ns/placed", &waitingEntry{reason: workv1alpha1.BindingReasonSuccess})

	tests := []struct {
		name          string
		member        string
		before, after *capacity.Model
		clusterScoped bool
		want          []string
	}{
		{name: "m1 has room for 3", member: "m1", before: modelOf("1"), after: modelOf("3"),
			want: []string{"ns/two-on-m1", "ns/unschedulable"}},
		{name: "m1 has room for 4", member: "m1", before: modelOf("1"), after: modelOf("4"),
			want: []string{"ns/four-on-m1", "ns/two-on-m1", "ns/unschedulable"}},
		{name: "m1 has less room than before", member: "m1", before: modelOf("3"), after: modelOf("1"),
			want: nil},
		{name: "m1 has room, cluster-scoped bindings", member: "m1", before: modelOf("1"), after: modelOf("3"), clusterScoped: true,
			want: []string{"cluster-wide"}},
		{name: "m3, on which nothing is short, gains room", member: "m3", before: modelOf("1"), after: modelOf("8"),
			want: []string{"ns/unschedulable"}},
		{name: "a first model", member: "m3", before: nil, after: modelOf("1"),
			want: []string{"ns/unschedulable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.freedBy(tt.member, tt.before, tt.after, tt.clusterScoped)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("queued %v, want %v", got, tt.want)
			}
		})
	}

	// Placed as asked at last: no longer waiting.
	w.set("ns/two-on-m1", nil)
	w.forget("ns/four-on-m1")
	if got := w.freedBy("m1", modelOf("1"), modelOf("8"), false); !slices.Equal(got, []string{"ns/unschedulable"}) {
		t.Errorf("after the m1 bindings were placed, queued %v", got)
	}
	if w.len() != 4 {
		t.Errorf("%d bindings wait, want 4 (two-on-m2, cluster-wide, unschedulable, over-quota)", w.len())
	}
}

// BenchmarkCapacityReportWithManyShortBindings is the cost of one member's
// capacity report to the place phase's watch with 10,000 bindings placed
// short, 100 of them on the member that reports: it looks at those 100 (and
// the failed bindings), not at the 10,000.
func BenchmarkCapacityReportWithManyShortBindings(b *testing.B) {
	var w waitingBindings
	req := cpuRequirement("1")
	for i := range 10_000 {
		member := fmt.Sprintf("m%03d", i%100)
		w.set(fmt.Sprintf("ns%d/b%d", i%100, i), &waitingEntry{reason: workv1alpha1.BindingReasonPartiallyScheduled, short: []string{member}, req: req, need: 2, capacityHelps: true})
	}
	before, after := modelOf("1"), modelOf("3")
	var queued int
	b.ResetTimer()
	for range b.N {
		queued = len(w.freedBy("m042", before, after, false))
	}
	b.ReportMetric(float64(queued), "queued/report")
	b.ReportMetric(float64(w.len()), "waiting")
}
