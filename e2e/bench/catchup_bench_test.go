package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// BenchmarkMemberCatchUp measures how soon a Push member that hung is
// caught up once it answers again: 100 Deployments on member1 (its CAPI
// Cluster paused, so that failover stays out of it), member1's
// kube-apiserver frozen (SIGSTOP) for FLOTILLA_BENCH_HANG (default 60s)
// while every template changes, then thawed (SIGCONT); the time from the
// thaw to each of member1's Works showing the new template applied
// (Applied=True at its new generation, polled every 50 ms) gives p50, p99
// and the last.
func BenchmarkMemberCatchUp(b *testing.B) {
	const works = 100
	hang := time.Minute
	if v := os.Getenv("FLOTILLA_BENCH_HANG"); v != "" {
		var err error
		if hang, err = time.ParseDuration(v); err != nil {
			b.Fatalf("FLOTILLA_BENCH_HANG: %v", err)
		}
	}
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()
	m := f.Member("member1")
	if err := f.PauseCluster(ctx, m, true); err != nil {
		b.Fatal(err)
	}

	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("catchup-%d", iter)
		apply := func(version string) {
			docs := []string{strings.NewReplacer("NS", ns).Replace(`
apiVersion: v1
kind: Namespace
metadata: {name: NS, labels: {flotilla.io/federated: "true"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: member1, namespace: NS}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
`)}
			for i := range works {
				docs = append(docs, versionedDeployment(ns, fmt.Sprintf("w%03d", i), version))
			}
			if err := f.Apply(ctx, []byte(strings.Join(docs, "\n---\n"))); err != nil {
				b.Fatal(err)
			}
		}
		apply("v1")
		if _, err := waitWorksApplied(ctx, f.Hub.Client, ns, works, time.Now(), 5*time.Minute); err != nil {
			b.Fatal(err)
		}

		if err := m.FreezeAPIServer(); err != nil {
			b.Fatal(err)
		}
		apply("v2")
		time.Sleep(hang)
		b.ResetTimer()
		thawed := time.Now()
		if err := m.ThawAPIServer(); err != nil {
			b.Fatal(err)
		}
		lat, err := waitWorksApplied(ctx, f.Hub.Client, ns, works, thawed, 5*time.Minute)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Milliseconds()) }
		b.ReportMetric(p(0.50), "thaw-to-applied-p50-ms")
		b.ReportMetric(p(0.99), "thaw-to-applied-p99-ms")
		b.ReportMetric(float64(lat[len(lat)-1].Milliseconds()), "thaw-to-all-applied-ms")
		fmt.Fprintf(os.Stderr, "%d Works on a member hung %s: thaw → applied p50 %.0f ms, p99 %.0f ms, all %d ms\n",
			works, hang, p(0.50), p(0.99), lat[len(lat)-1].Milliseconds())
	}
}

// waitWorksApplied waits until the n Works of ns's bindings in member1 are
// Applied=True at their current generation, and returns for each the time
// from since to when it was first seen so.
func waitWorksApplied(ctx context.Context, hub client.Client, ns string, n int, since time.Time, timeout time.Duration) ([]time.Duration, error) {
	seen := map[string]time.Duration{}
	deadline := time.Now().Add(timeout)
	for {
		list := &workv1alpha1.WorkList{}
		if err := hub.List(ctx, list, client.InNamespace(clusterv1alpha1.ExecutionNamespace("member1"))); err == nil {
			for i := range list.Items {
				w := &list.Items[i]
				if w.Annotations[workv1alpha1.BindingNamespaceAnnotation] != ns {
					continue
				}
				if _, ok := seen[w.Name]; ok {
					continue
				}
				if c := conditions.Get(w, workv1alpha1.WorkApplied); c != nil && c.Status == "True" && c.ObservedGeneration == w.Generation && w.Generation > 0 {
					seen[w.Name] = time.Since(since)
				}
			}
		}
		if len(seen) >= n {
			out := make([]time.Duration, 0, len(seen))
			for _, d := range seen {
				out = append(out, d)
			}
			return out, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d of %d Works of %s applied in member1 after %s", len(seen), n, ns, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func versionedDeployment(ns, name, version string) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  replicas: 1
  selector: {matchLabels: {app: %[2]s}}
  template:
    metadata: {labels: {app: %[2]s}, annotations: {version: %[3]s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 10m}}}
`, ns, name, version)
}
