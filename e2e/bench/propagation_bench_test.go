// Package bench measures Flotilla end to end on the local fleet: real
// apiservers, Cluster API, flotilla-manager and kwok members. Run with
// `make bench-e2e`; the figures depend on the machine, so quote them with it.
package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkPropagationLatency applies 100 Deployments (3 replicas, 10m CPU)
// with a policy that divides each over the 3 members, all at once, and
// measures for each the time from its apply to its binding being fully
// applied with every replica Ready in the members. It reports p50 and p99
// in milliseconds and the throughput of the whole burst.
func BenchmarkPropagationLatency(b *testing.B) {
	const workloads = 100
	ctx := context.Background()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	f, err := fleet.Start(ctx, fleet.Options{
		Dir: b.TempDir(), RepoRoot: root, Members: fleet.DefaultMembers(),
		Manager: &fleet.ManagerOptions{Binary: filepath.Join(root, "bin", "flotilla-manager"), Args: fleet.DefaultManagerArgs()},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	if err := f.WaitMembersReady(ctx, 5*time.Minute); err != nil {
		b.Fatal(err)
	}

	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("bench-%d", iter)
		if err := f.Apply(ctx, []byte(namespaceAndPolicy(ns))); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		applied := map[string]time.Time{}
		start := time.Now()
		for i := range workloads {
			name := fmt.Sprintf("w%03d", i)
			if err := f.Apply(ctx, []byte(deployment(ns, name))); err != nil {
				b.Fatal(err)
			}
			applied[name] = time.Now()
		}
		latencies := waitAllReady(ctx, b, f, ns, applied)
		total := time.Since(start)
		b.StopTimer()

		sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
		p := func(q float64) float64 { return float64(latencies[int(q*float64(len(latencies)-1))].Milliseconds()) }
		b.ReportMetric(p(0.50), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
		b.ReportMetric(float64(workloads)/total.Seconds(), "workloads/s")
		fmt.Fprintf(os.Stderr, "propagation of %d workloads × 3 members: p50 %.0f ms, p99 %.0f ms, all Ready in %s\n", workloads, p(0.5), p(0.99), total.Round(time.Millisecond))
	}
}

// waitAllReady polls the bindings every 50 ms and records, for each
// workload, when it was first seen fully applied with every replica Ready.
func waitAllReady(ctx context.Context, b *testing.B, f *fleet.Fleet, ns string, applied map[string]time.Time) []time.Duration {
	done := map[string]time.Duration{}
	deadline := time.Now().Add(10 * time.Minute)
	for len(done) < len(applied) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d workloads Ready after 10 minutes", len(done), len(applied))
		}
		list := &workv1alpha1.ResourceBindingList{}
		if err := f.Hub.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for i := range list.Items {
			rb := &list.Items[i]
			name := rb.Spec.Resource.Name
			if _, seen := done[name]; seen || rb.Spec.Resource.Kind != "Deployment" {
				continue
			}
			if conditions.IsTrue(rb, workv1alpha1.ConditionFullyApplied) && rb.Status.ReadyReplicas == rb.Spec.Replicas && rb.Spec.Replicas > 0 {
				done[name] = now.Sub(applied[name])
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	out := make([]time.Duration, 0, len(done))
	for _, d := range done {
		out = append(out, d)
	}
	return out
}

func namespaceAndPolicy(ns string) string {
	return strings.ReplaceAll(`
apiVersion: v1
kind: Namespace
metadata: {name: NS, labels: {flotilla.io/federated: "true"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: NS}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
`, "NS", ns)
}

func deployment(ns, name string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  replicas: 3
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 10m}}}
`, name, ns, name, name)
}
