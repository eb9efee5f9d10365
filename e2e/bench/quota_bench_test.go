package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkQuotaRetry measures how soon a binding waiting on a
// FederatedResourceQuota is placed once quota frees, on the local fleet
// with the released manager: a namespace's quota (1 CPU) is filled by a
// holder Deployment of 20 × 50m; 20 times, a new Deployment of 1 × 50m is
// refused (Scheduled=False QuotaExceeded), then the holder is scaled down
// by one replica on the hub, and the time from that write to the waiting
// binding's Scheduled=True (polled every 10 ms) is recorded.
func BenchmarkQuotaRetry(b *testing.B) {
	const runs = 20
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()

	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("quota-retry-%d", iter)
		if err := f.Apply(ctx, []byte(federatedNamespace(ns, "{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}")+`---
apiVersion: policy.flotilla.io/v1alpha1
kind: FederatedResourceQuota
metadata: {name: tenant, namespace: `+ns+`}
spec:
  overall: {cpu: "1"}
---`+milliDeployment(ns, "holder", runs, "50m"))); err != nil {
			b.Fatal(err)
		}
		waitScheduled(ctx, b, f, ns, "holder", workv1alpha1.BindingReasonSuccess)
		watchCtx, stopWatch := context.WithCancel(ctx)
		hops, err := watchQuotaHops(watchCtx, f, ns)
		if err != nil {
			b.Fatal(err)
		}
		var lat []time.Duration
		var runHops [][4]time.Duration
		b.ResetTimer()
		for i := range runs {
			name := fmt.Sprintf("waiter%02d", i)
			if err := f.Apply(ctx, []byte(milliDeployment(ns, name, 1, "50m"))); err != nil {
				b.Fatal(err)
			}
			waitScheduled(ctx, b, f, ns, name, workv1alpha1.BindingReasonQuotaExceeded)
			holder := &appsv1.Deployment{}
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "holder"}, holder); err != nil {
				b.Fatal(err)
			}
			patch := client.MergeFrom(holder.DeepCopy())
			holder.Spec.Replicas = ptr.To(int32(runs - 1 - i))
			start := time.Now()
			if err := f.Hub.Client.Patch(ctx, holder, patch); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, waitScheduled(ctx, b, f, ns, name, workv1alpha1.BindingReasonSuccess).Sub(start))
			runHops = append(runHops, hops.since(start, int32(runs-1-i), name+"-deployment", time.Second))
		}
		b.StopTimer()
		stopWatch()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Milliseconds()) }
		b.ReportMetric(p(0.50), "quota-freed-to-placed-p50-ms")
		b.ReportMetric(p(0.99), "quota-freed-to-placed-p99-ms")
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Fprintf(os.Stderr, "quota freed (holder scaled down on the hub) → waiting binding Scheduled=True, %d runs: p50 %.0f ms, p99 %.0f ms, all %v; load after: %s\n",
			runs, p(0.50), p(0.99), lat, strings.TrimSpace(string(load)))
		// Where each run's time went, slowest first: the holder's binding
		// taking the new replica count (detector), its placement shrinking
		// (scheduler), its renderedUsage shrinking (renderer: what frees
		// quota), the waiter placed (quota retry and its decision).
		order := make([]int, len(runHops))
		for i := range order {
			order[i] = i
		}
		sort.Slice(order, func(i, j int) bool { return runHops[order[i]][3] > runHops[order[j]][3] })
		var rows []string
		for _, i := range order {
			h := runHops[i]
			rows = append(rows, fmt.Sprintf("%v→%v→%v→%v", h[0].Round(time.Millisecond), (h[1]-h[0]).Round(time.Millisecond),
				(h[2]-h[1]).Round(time.Millisecond), (h[3]-h[2]).Round(time.Millisecond)))
		}
		fmt.Fprintf(os.Stderr, "  hops per run, slowest first (patch→holder binding replicas, →holder placement, →holder renderedUsage, →waiter placed): %s\n", strings.Join(rows, " "))
	}
}

// waitScheduled polls a Deployment's binding every 10 ms until its
// Scheduled condition has reason and returns when it was seen.
// quotaHops records, from a watch of the namespace's bindings, when each
// event was seen.
type quotaHops struct {
	mu     sync.Mutex
	events []quotaEvent
}

type quotaEvent struct {
	at               time.Time
	name             string
	replicas, placed int32
	renderedMilliCPU int64
	scheduled        bool
}

func watchQuotaHops(ctx context.Context, f *fleet.Fleet, ns string) (*quotaHops, error) {
	c, err := client.NewWithWatch(f.Hub.RESTConfig(), client.Options{Scheme: f.Hub.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	h := &quotaHops{}
	go follow(ctx, c, &workv1alpha1.ResourceBindingList{}, []client.ListOption{client.InNamespace(ns)}, func(o runtime.Object, at time.Time) {
		rb, ok := o.(*workv1alpha1.ResourceBinding)
		if !ok {
			return
		}
		e := quotaEvent{at: at, name: rb.Name, replicas: rb.Spec.Replicas, scheduled: conditions.IsTrue(rb, workv1alpha1.ConditionScheduled)}
		for _, tc := range rb.Spec.Clusters {
			e.placed += tc.Replicas
		}
		if q, ok := rb.Status.RenderedUsage[corev1.ResourceCPU]; ok {
			e.renderedMilliCPU = q.MilliValue()
		} else {
			e.renderedMilliCPU = -1
		}
		h.mu.Lock()
		h.events = append(h.events, e)
		h.mu.Unlock()
	})
	return h, nil
}

// since returns, after start, when the holder's binding was first seen
// with replicas, then placed with them, then rendered with them (50m
// each), and when waiter was first seen Scheduled, waiting up to grace
// for the watch to bring that last event (the poll may see it first); a
// hop not seen counts as the next one.
func (h *quotaHops) since(start time.Time, replicas int32, waiter string, grace time.Duration) [4]time.Duration {
	deadline := time.Now().Add(grace)
	for {
		at, done := h.seen(start, replicas, waiter)
		if done || time.Now().After(deadline) {
			var out [4]time.Duration
			for i := len(at) - 1; i >= 0; i-- {
				if at[i].IsZero() && i < len(at)-1 {
					at[i] = at[i+1]
				}
				if !at[i].IsZero() {
					out[i] = at[i].Sub(start)
				}
			}
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (h *quotaHops) seen(start time.Time, replicas int32, waiter string) (at [4]time.Time, done bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.at.Before(start) {
			continue
		}
		seen := [4]bool{
			e.name == "holder-deployment" && e.replicas == replicas,
			e.name == "holder-deployment" && e.placed == replicas,
			e.name == "holder-deployment" && e.renderedMilliCPU == int64(replicas)*50,
			e.name == waiter && e.scheduled,
		}
		for i := range at {
			if seen[i] && at[i].IsZero() {
				at[i] = e.at
			}
		}
	}
	return at, !at[3].IsZero()
}

func waitScheduled(ctx context.Context, b *testing.B, f *fleet.Fleet, ns, name, reason string) time.Time {
	deadline := time.Now().Add(2 * time.Minute)
	var last *metav1.Condition
	for time.Now().Before(deadline) {
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-deployment"}, rb); err == nil {
			if last = conditions.Get(rb, workv1alpha1.ConditionScheduled); last != nil && last.Reason == reason {
				return time.Now()
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatalf("binding of %s/%s: no Scheduled %s in 2 minutes; last %+v", ns, name, reason, last)
	return time.Time{}
}

func milliDeployment(ns, name string, replicas int, cpu string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  replicas: %[3]d
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: %[4]s}}}
`, ns, name, replicas, cpu)
}
