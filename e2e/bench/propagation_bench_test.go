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

	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkPropagationLatency applies 100 Deployments (3 replicas, 10m CPU)
// with a policy that divides each over the 3 members, all at once, and
// measures for each the time from its apply to its binding being fully
// applied with every replica Ready in the members, and the time from its
// last member having its part Ready to the hub showing it, split into the
// member → its Work on the hub and the Work → the binding. The times are
// those the events reach the benchmark's watches (readiness). It reports
// p50 and p99 in milliseconds and the throughput of the whole burst.
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
		watchCtx, stopWatches := context.WithCancel(ctx)
		ready, err := watchReadiness(watchCtx, f, ns)
		if err != nil {
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
		deadline := time.Now().Add(10 * time.Minute)
		for ready.done() < workloads {
			if time.Now().After(deadline) {
				b.Fatalf("only %d of %d workloads Ready on the hub after 10 minutes", ready.done(), workloads)
			}
			time.Sleep(100 * time.Millisecond)
		}
		total := time.Since(start)
		b.StopTimer()
		stopWatches()

		var latencies []time.Duration
		ready.mu.Lock()
		for name, at := range ready.hub {
			latencies = append(latencies, at.Sub(applied[name]))
		}
		ready.mu.Unlock()
		lags := ready.lags()
		// Every binding is placed on every member its policy names (3
		// replicas by equal weights over 3 members): none loses a member
		// to a capacity view the burst itself made stale.
		var short []string
		ready.mu.Lock()
		for name, members := range ready.placed {
			if len(members) != 3 {
				short = append(short, fmt.Sprintf("%s on %v", name, members))
			}
		}
		ready.mu.Unlock()
		sort.Strings(short)
		b.ReportMetric(float64(len(short)), "bindings-not-on-every-member")
		if len(short) > 0 {
			b.Errorf("%d of %d bindings are Ready on fewer than the 3 members their policy names: %s", len(short), workloads, strings.Join(short, "; "))
		}
		b.ReportMetric(quantileMs(latencies, 0.50), "p50-ms")
		b.ReportMetric(quantileMs(latencies, 0.99), "p99-ms")
		b.ReportMetric(quantileMs(lags.memberToBinding, 0.50), "member-ready-to-hub-p50-ms")
		b.ReportMetric(quantileMs(lags.memberToBinding, 0.99), "member-ready-to-hub-p99-ms")
		b.ReportMetric(quantileMs(lags.memberToWork, 0.99), "member-ready-to-work-p99-ms")
		b.ReportMetric(quantileMs(lags.workToBinding, 0.99), "work-to-binding-p99-ms")
		b.ReportMetric(float64(workloads)/total.Seconds(), "workloads/s")
		fmt.Fprintf(os.Stderr, "propagation of %d workloads × 3 members: p50 %.0f ms, p99 %.0f ms, all Ready in %s; last member Ready → hub p50 %.0f ms, p99 %.0f ms (→ its Work p50 %.0f ms, p99 %.0f ms; Work → binding p50 %.0f ms, p99 %.0f ms)\n",
			workloads, quantileMs(latencies, 0.5), quantileMs(latencies, 0.99), total.Round(time.Millisecond),
			quantileMs(lags.memberToBinding, 0.5), quantileMs(lags.memberToBinding, 0.99),
			quantileMs(lags.memberToWork, 0.5), quantileMs(lags.memberToWork, 0.99),
			quantileMs(lags.workToBinding, 0.5), quantileMs(lags.workToBinding, 0.99))
		if times, err := controllerTimes(ctx, f, "execution", "status-resourcebinding", "works-resourcebinding", "detector"); err == nil {
			fmt.Fprintln(os.Stderr, "  "+times)
		} else {
			fmt.Fprintln(os.Stderr, "  no controller times:", err)
		}
		if times, err := hubRequestTimes(ctx, f); err == nil {
			fmt.Fprintln(os.Stderr, "  "+times)
		} else {
			fmt.Fprintln(os.Stderr, "  no hub request times:", err)
		}
	}
}

// startFleet starts the default local fleet with the built flotilla-manager
// and waits for its members to be Ready. FLOTILLA_BENCH_MANAGER_ARGS adds
// flags to the manager's, to compare settings (e.g. --kube-api-qps=200).
func startFleet(ctx context.Context, b *testing.B) *fleet.Fleet {
	b.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		b.Fatal(err)
	}
	f, err := fleet.Start(ctx, fleet.Options{
		Dir: b.TempDir(), RepoRoot: root, Members: fleet.DefaultMembers(),
		Manager: &fleet.ManagerOptions{Binary: filepath.Join(root, "bin", "flotilla-manager"),
			Args: append(fleet.DefaultManagerArgs(), strings.Fields(os.Getenv("FLOTILLA_BENCH_MANAGER_ARGS"))...)},
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
