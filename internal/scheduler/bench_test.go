package scheduler_test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// The benchmark fleet and bindings are fixed (see schedulertest.BenchFleet)
// so that figures compare across versions.

type benchPolicy struct {
	name      string
	placement func() *policyv1alpha1.Placement
}

var benchPolicies = []benchPolicy{
	{"Duplicated", func() *policyv1alpha1.Placement {
		// A label affinity matching a quarter of the fleet (region r0).
		return with(duplicated(), func(p *policyv1alpha1.Placement) {
			p.ClusterAffinity = &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "r0"}}}
		})
	}},
	{"DividedStatic", equalWeights},
	{"DividedDynamic", dynamicWeights},
	{"Aggregated", aggregated},
}

// benchBinding is a Deployment of 100 replicas × 100m CPU.
func benchBinding(key string, p *policyv1alpha1.Placement) scheduler.Input {
	return scheduler.Input{
		Key: key, Namespace: "bench", APIVersion: "apps/v1", Kind: "Deployment",
		Replicas:     100,
		Requirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		Placement:    p,
	}
}

// BenchmarkSchedule is one decision, ledger commit included. The same
// binding is scheduled again each iteration, so its ledger entries are
// replaced and the fleet stays as free as at the start.
func BenchmarkSchedule(b *testing.B) {
	for _, p := range benchPolicies {
		for _, n := range []int{100, 1000} {
			b.Run(fmt.Sprintf("%s/%d", p.name, n), func(b *testing.B) {
				snap := st.Snapshot(b, st.BenchFleet(n)...)
				s := scheduler.New()
				in := benchBinding("bench/web", p.placement())
				b.ReportAllocs()
				cpu := startCPUClock()
				for b.Loop() {
					if _, err := s.Schedule(snap, in); err != nil {
						b.Fatal(err)
					}
				}
				cpu.report(b, b.N)
			})
		}
	}
}

// BenchmarkSchedule10kBindings schedules 10,000 distinct bindings over 1,000
// members end to end with the assumed ledger, the four policies in turn. The
// fleet holds about 485,000 such replicas and the bindings ask for
// 1,375,000, so the later ones find it full: "scheduled" and "unschedulable"
// report how many of each, and no member is ever given more than fits.
func BenchmarkSchedule10kBindings(b *testing.B) {
	const bindings = 10_000
	snap := st.Snapshot(b, st.BenchFleet(1000)...)
	inputs := make([]scheduler.Input, bindings)
	for i := range inputs {
		inputs[i] = benchBinding(fmt.Sprintf("bench/web-%05d", i), benchPolicies[i%len(benchPolicies)].placement())
	}
	b.ReportAllocs()
	var scheduled, unschedulable int
	var elapsed time.Duration
	given := make([]int64, snap.Len())
	cpu := startCPUClock()
	for b.Loop() {
		start := time.Now()
		s := scheduler.New()
		scheduled, unschedulable = 0, 0
		clear(given)
		for _, in := range inputs {
			res, err := s.Schedule(snap, in)
			switch scheduler.ReasonOf(err) {
			case "Success":
				scheduled++
				for _, tc := range res.Clusters {
					m, _ := snap.Lookup(tc.Name)
					given[m.Index] += int64(tc.Replicas)
				}
			case "Unschedulable":
				unschedulable++
			default:
				b.Fatal(err)
			}
		}
		elapsed += time.Since(start)
	}
	cpu.report(b, b.N*bindings)
	b.ReportMetric(float64(scheduled), "scheduled")
	b.ReportMetric(float64(unschedulable), "unschedulable")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N*bindings), "ns/binding")

	fleet := st.BenchFleet(1000)
	for i := range fleet {
		if holds := capacity.Fit(fleet[i].Status.CapacityModel, inputs[0].Requirements); given[i] > holds {
			b.Fatalf("member %s was given %d replicas, holds %d", fleet[i].Name, given[i], holds)
		}
	}
}

// cpuClock measures the process's CPU time (user+system, GC included). On a
// machine shared with other work, wall time per op rises with the load while
// CPU time per op does not, so both are reported.
type cpuClock struct{ start time.Duration }

func startCPUClock() cpuClock { return cpuClock{start: processCPU()} }

// report adds "cpu-ns/<unit>": CPU time per op, or per binding when n counts bindings.
func (c cpuClock) report(b *testing.B, n int) {
	unit := "cpu-ns/op"
	if n != b.N {
		unit = "cpu-ns/binding"
	}
	b.ReportMetric(float64(processCPU()-c.start)/float64(n), unit)
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
