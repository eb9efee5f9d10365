package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		var lat []time.Duration
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
		}
		b.StopTimer()
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Milliseconds()) }
		b.ReportMetric(p(0.50), "quota-freed-to-placed-p50-ms")
		b.ReportMetric(p(0.99), "quota-freed-to-placed-p99-ms")
		fmt.Fprintf(os.Stderr, "quota freed (holder scaled down on the hub) → waiting binding Scheduled=True, %d runs: p50 %.0f ms, p99 %.0f ms, all %v\n",
			runs, p(0.50), p(0.99), lat)
	}
}

// waitScheduled polls a Deployment's binding every 10 ms until its
// Scheduled condition has reason and returns when it was seen.
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
