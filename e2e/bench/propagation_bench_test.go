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

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkPropagationLatency applies 100 Deployments (3 replicas, 10m CPU)
// with a policy that divides each over the 3 members, all at once, and
// measures for each the time from its apply to its binding being fully
// applied with every replica Ready in the members, and the time from its
// last member having its part Ready to the hub showing it. It reports p50
// and p99 in milliseconds and the throughput of the whole burst.
func BenchmarkPropagationLatency(b *testing.B) {
	const workloads = 100
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()

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
		latencies, lags := waitAllReady(ctx, b, f, ns, applied)
		total := time.Since(start)
		b.StopTimer()

		quantile := func(d []time.Duration, q float64) float64 {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			return float64(d[int(q*float64(len(d)-1))].Milliseconds())
		}
		b.ReportMetric(quantile(latencies, 0.50), "p50-ms")
		b.ReportMetric(quantile(latencies, 0.99), "p99-ms")
		b.ReportMetric(quantile(lags, 0.50), "member-ready-to-hub-p50-ms")
		b.ReportMetric(quantile(lags, 0.99), "member-ready-to-hub-p99-ms")
		b.ReportMetric(float64(workloads)/total.Seconds(), "workloads/s")
		fmt.Fprintf(os.Stderr, "propagation of %d workloads × 3 members: p50 %.0f ms, p99 %.0f ms, all Ready in %s; last member Ready → hub p50 %.0f ms, p99 %.0f ms\n",
			workloads, quantile(latencies, 0.5), quantile(latencies, 0.99), total.Round(time.Millisecond), quantile(lags, 0.5), quantile(lags, 0.99))
	}
}

// waitAllReady polls the bindings and the members' Deployments every 50 ms
// and records, for each workload, when its binding was first seen fully
// applied with every replica Ready, as a latency from its apply, and how
// long after its last member had its part Ready the hub showed it.
func waitAllReady(ctx context.Context, b *testing.B, f *fleet.Fleet, ns string, applied map[string]time.Time) (latencies, lags []time.Duration) {
	done := map[string]time.Duration{}
	memberReady := map[string]map[string]time.Time{} // workload → member → first seen Ready
	deadline := time.Now().Add(10 * time.Minute)
	for len(done) < len(applied) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d workloads Ready after 10 minutes", len(done), len(applied))
		}
		now := time.Now()
		for _, m := range f.Members() {
			list := &appsv1.DeploymentList{}
			if err := m.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
				continue
			}
			for i := range list.Items {
				d := &list.Items[i]
				if d.Spec.Replicas == nil || d.Status.ObservedGeneration != d.Generation || d.Status.ReadyReplicas != *d.Spec.Replicas {
					continue
				}
				if memberReady[d.Name] == nil {
					memberReady[d.Name] = map[string]time.Time{}
				}
				if _, ok := memberReady[d.Name][m.Spec.Name]; !ok {
					memberReady[d.Name][m.Spec.Name] = now
				}
			}
		}
		list := &workv1alpha1.ResourceBindingList{}
		if err := f.Hub.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
			b.Fatal(err)
		}
		now = time.Now()
		for i := range list.Items {
			rb := &list.Items[i]
			name := rb.Spec.Resource.Name
			if _, seen := done[name]; seen || rb.Spec.Resource.Kind != "Deployment" {
				continue
			}
			if conditions.IsTrue(rb, workv1alpha1.ConditionFullyApplied) && rb.Status.ReadyReplicas == rb.Spec.Replicas && rb.Spec.Replicas > 0 {
				done[name] = now.Sub(applied[name])
				// The last member to be Ready; a member not seen Ready yet
				// by this poll was Ready by now at the latest.
				last := time.Time{}
				for _, c := range rb.Spec.Clusters {
					t, ok := memberReady[name][c.Name]
					if !ok {
						t = now
					}
					if c.Replicas > 0 && t.After(last) {
						last = t
					}
				}
				lags = append(lags, now.Sub(last))
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, d := range done {
		latencies = append(latencies, d)
	}
	return latencies, lags
}

// startFleet starts the default local fleet with the built flotilla-manager
// and waits for its members to be Ready.
func startFleet(ctx context.Context, b *testing.B) *fleet.Fleet {
	b.Helper()
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
	if err := f.WaitMembersReady(ctx, 5*time.Minute); err != nil {
		f.Stop()
		b.Fatal(err)
	}
	return f
}

// namespaceAndPolicy is a federated namespace with a policy dividing every
// Deployment's replicas over the three members by weight.
func namespaceAndPolicy(ns string) string {
	return federatedNamespace(ns, "{replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}")
}

// federatedNamespace is a federated namespace with a policy placing every
// Deployment on the three members with the given replicaScheduling.
func federatedNamespace(ns, replicaScheduling string) string {
	return strings.NewReplacer("NS", ns, "SCHEDULING", replicaScheduling).Replace(`
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
    replicaScheduling: SCHEDULING
`)
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
