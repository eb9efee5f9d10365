package bench

import (
	"context"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkStatusLag applies one Deployment at a time (3 replicas divided
// over the 3 members), 20 times, and measures for each: from its apply to
// its binding showing every replica Ready on the hub, and from the moment
// its last member had its part Ready to the hub showing it — the lag that
// is Flotilla's own. Members and hub are polled every 20 ms.
func BenchmarkStatusLag(b *testing.B) {
	const runs = 20
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()

	for iter := 0; iter < b.N; iter++ {
		ns := fmt.Sprintf("lag-%d", iter)
		if err := f.Apply(ctx, []byte(namespaceAndPolicy(ns))); err != nil {
			b.Fatal(err)
		}
		var toHub, lag []time.Duration
		b.ResetTimer()
		for i := range runs {
			name := fmt.Sprintf("one%02d", i)
			start := time.Now()
			if err := f.Apply(ctx, []byte(deployment(ns, name))); err != nil {
				b.Fatal(err)
			}
			hub, lastMember := waitReadyEverywhere(ctx, b, f, ns, name)
			toHub = append(toHub, hub.Sub(start))
			lag = append(lag, hub.Sub(lastMember))
		}
		b.StopTimer()
		report := func(what string, d []time.Duration) (float64, float64) {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			p := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Milliseconds()) }
			b.ReportMetric(p(0.50), what+"-p50-ms")
			b.ReportMetric(p(0.99), what+"-p99-ms")
			return p(0.50), p(0.99)
		}
		a50, a99 := report("apply-to-hub-ready", toHub)
		l50, l99 := report("member-ready-to-hub", lag)
		fmt.Fprintf(os.Stderr, "one Deployment × 3 members, %d runs: apply → Ready on the hub p50 %.0f ms, p99 %.0f ms; last member Ready → hub p50 %.0f ms, p99 %.0f ms\n",
			runs, a50, a99, l50, l99)
	}
}

// waitReadyEverywhere polls until the binding shows every replica Ready,
// and returns when it did and when the last member first had its part of
// the Deployment Ready.
func waitReadyEverywhere(ctx context.Context, b *testing.B, f *fleet.Fleet, ns, name string) (hub, lastMember time.Time) {
	memberReady := map[string]time.Time{}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if time.Now().After(deadline) {
			b.Fatalf("%s/%s not Ready on the hub after 2 minutes (members Ready: %v)", ns, name, memberReady)
		}
		now := time.Now()
		for _, m := range f.Members() {
			if _, ok := memberReady[m.Spec.Name]; ok {
				continue
			}
			d := &appsv1.Deployment{}
			if err := m.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err == nil &&
				d.Spec.Replicas != nil && d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == *d.Spec.Replicas {
				memberReady[m.Spec.Name] = now
			}
		}
		rb := &workv1alpha1.ResourceBinding{}
		if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-deployment"}, rb); err == nil &&
			conditions.IsTrue(rb, workv1alpha1.ConditionFullyApplied) && rb.Spec.Replicas > 0 && rb.Status.ReadyReplicas == rb.Spec.Replicas {
			placed := 0
			for _, c := range rb.Spec.Clusters {
				if c.Replicas > 0 {
					placed++
					if t, ok := memberReady[c.Name]; ok && t.After(lastMember) {
						lastMember = t
					}
				}
			}
			if len(memberReady) >= placed {
				return now, lastMember
			}
			// The hub saw it before this poll saw a member: that member's
			// moment is now at the latest.
			return now, now
		}
		time.Sleep(20 * time.Millisecond)
	}
}
