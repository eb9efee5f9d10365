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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// BenchmarkBurstTail applies the same 100 Deployments (2 replicas, 10m CPU)
// twice on one fleet, in one run: first straight to the three member
// apiservers (one applier per member, as the hub's appliers run), then
// through the hub with a policy duplicating each over the three members.
// For each (Deployment, member) pair it records the time from the apply to
// the Deployment being Ready in the member, as the benchmark's watches see
// it, and reports p50 and p99 of both runs and their ratios (the floor is
// the direct apply: the members' own control planes). For the hub run it
// splits each pair's time into the hops it took — apply → binding seen,
// binding → placed, placed → the member's Work seen, Work → the object
// created in the member, created → Ready — and prints the quantiles of each
// hop over the slowest tenth of the pairs next to all of them: where the
// tail comes from.
func BenchmarkBurstTail(b *testing.B) {
	const workloads = 100
	ctx := context.Background()
	f := startFleet(ctx, b)
	defer f.Stop()

	for iter := 0; iter < b.N; iter++ {
		b.ResetTimer()
		direct := directBurst(ctx, b, f, fmt.Sprintf("tail-direct-%d", iter), workloads)
		hub := hubBurst(ctx, b, f, fmt.Sprintf("tail-hub-%d", iter), workloads)
		b.StopTimer()

		d50, d99 := quantileMs(direct.total(), 0.50), quantileMs(direct.total(), 0.99)
		h50, h99 := quantileMs(hub.total(), 0.50), quantileMs(hub.total(), 0.99)
		b.ReportMetric(d50, "direct-ready-p50-ms")
		b.ReportMetric(d99, "direct-ready-p99-ms")
		b.ReportMetric(h50, "hub-ready-p50-ms")
		b.ReportMetric(h99, "hub-ready-p99-ms")
		b.ReportMetric(h50/d50, "ratio-p50")
		b.ReportMetric(h99/d99, "ratio-p99")
		fmt.Fprintf(os.Stderr, "burst of %d Deployments × 3 members, apply → Ready in the member: direct p50 %.0f ms, p99 %.0f ms (all in %s); through the hub p50 %.0f ms, p99 %.0f ms (all in %s); ratio p50 %.2f× (target ≤ 1.10), p99 %.2f× (target ≤ 1.25)\n",
			workloads, d50, d99, direct.span.Round(time.Millisecond), h50, h99, hub.span.Round(time.Millisecond), h50/d50, h99/d99)
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Fprintln(os.Stderr, "  load after: "+strings.TrimSpace(string(load)))
		fmt.Fprintln(os.Stderr, "  direct: "+direct.hops())
		fmt.Fprintln(os.Stderr, "  hub:    "+hub.hops())
		if times, err := controllerTimes(ctx, f, "detector", "scheduling-resourcebinding", "works-resourcebinding", "execution"); err == nil {
			fmt.Fprintln(os.Stderr, "  "+times)
		}
	}
}

// burstPair is one Deployment in one member: when each hop was seen.
type burstPair struct {
	applied, binding, placed, work, created, ready time.Time
}

// burst is one run's pairs, by workload then member.
type burst struct {
	mu    sync.Mutex
	pairs map[string]map[string]*burstPair
	span  time.Duration
	hub   bool
}

func newBurst(hub bool) *burst { return &burst{pairs: map[string]map[string]*burstPair{}, hub: hub} }

// pair returns the record of workload in member, making it.
func (r *burst) pair(workload, member string) *burstPair {
	if r.pairs[workload] == nil {
		r.pairs[workload] = map[string]*burstPair{}
	}
	p := r.pairs[workload][member]
	if p == nil {
		p = &burstPair{}
		r.pairs[workload][member] = p
	}
	return p
}

// mark sets *at to when unless it was set, under the lock.
func (r *burst) mark(workload, member string, field func(*burstPair) *time.Time, when time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := field(r.pair(workload, member)); t.IsZero() {
		*t = when
	}
}

func (r *burst) ready() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ms := range r.pairs {
		for _, p := range ms {
			if !p.ready.IsZero() && !p.applied.IsZero() {
				n++
			}
		}
	}
	return n
}

func (r *burst) total() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	for _, ms := range r.pairs {
		for _, p := range ms {
			out = append(out, p.ready.Sub(p.applied))
		}
	}
	return out
}

// hops prints each hop's p50 and p99 over every pair, and its p50 over the
// slowest tenth of the pairs (by apply → Ready). A hop whose event was not
// seen (a watch restarted past it) counts into the next one.
func (r *burst) hops() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type hop struct {
		name     string
		from, to func(*burstPair) time.Time
	}
	hops := []hop{
		{"apply→created", func(p *burstPair) time.Time { return p.applied }, func(p *burstPair) time.Time { return p.created }},
		{"created→Ready", func(p *burstPair) time.Time { return p.created }, func(p *burstPair) time.Time { return p.ready }},
	}
	if r.hub {
		hops = []hop{
			{"apply→binding", func(p *burstPair) time.Time { return p.applied }, func(p *burstPair) time.Time { return p.binding }},
			{"binding→placed", func(p *burstPair) time.Time { return p.binding }, func(p *burstPair) time.Time { return p.placed }},
			{"placed→Work", func(p *burstPair) time.Time { return p.placed }, func(p *burstPair) time.Time { return p.work }},
			{"Work→created", func(p *burstPair) time.Time { return p.work }, func(p *burstPair) time.Time { return p.created }},
			{"created→Ready", func(p *burstPair) time.Time { return p.created }, func(p *burstPair) time.Time { return p.ready }},
		}
	}
	var all []*burstPair
	for _, ms := range r.pairs {
		for _, p := range ms {
			all = append(all, p)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ready.Sub(all[i].applied) < all[j].ready.Sub(all[j].applied) })
	slow := all[len(all)-(len(all)+9)/10:]
	// seen is a hop's end, or the next seen one.
	at := func(p *burstPair, i int, end bool) time.Time {
		if !end {
			// A hop starts where the previous one ended.
			for j := i; j >= 0; j-- {
				if t := hops[j].from(p); !t.IsZero() {
					return t
				}
			}
			return p.applied
		}
		for j := i; j < len(hops); j++ {
			if t := hops[j].to(p); !t.IsZero() {
				return t
			}
		}
		return p.ready
	}
	var out []string
	for i, h := range hops {
		var every, tail []time.Duration
		for _, p := range all {
			every = append(every, at(p, i, true).Sub(at(p, i, false)))
		}
		for _, p := range slow {
			tail = append(tail, at(p, i, true).Sub(at(p, i, false)))
		}
		out = append(out, fmt.Sprintf("%s p50 %.0f ms p99 %.0f ms (slowest tenth: p50 %.0f ms)", h.name,
			quantileMs(every, 0.5), quantileMs(every, 0.99), quantileMs(tail, 0.5)))
	}
	return strings.Join(out, "; ")
}

// followMemberDeployments records, for each member, when each Deployment of
// ns was first seen there and first seen Ready.
func followMemberDeployments(ctx context.Context, b *testing.B, f *fleet.Fleet, ns string, r *burst) {
	for _, m := range f.Members() {
		c, err := client.NewWithWatch(m.RESTConfig(), client.Options{Scheme: m.Client.Scheme()})
		if err != nil {
			b.Fatal(err)
		}
		member := m.Spec.Name
		go follow(ctx, c, &appsv1.DeploymentList{}, []client.ListOption{client.InNamespace(ns)}, func(o runtime.Object, at time.Time) {
			d, ok := o.(*appsv1.Deployment)
			if !ok {
				return
			}
			r.mark(d.Name, member, func(p *burstPair) *time.Time { return &p.created }, at)
			if d.Spec.Replicas != nil && d.Status.ObservedGeneration == d.Generation && d.Status.ReadyReplicas == *d.Spec.Replicas {
				r.mark(d.Name, member, func(p *burstPair) *time.Time { return &p.ready }, at)
			}
		})
	}
}

// directBurst applies the Deployments straight to every member, one
// applier per member, and waits for all of them Ready; then it deletes the
// namespace in the members and waits for it to go, so the hub run finds
// the members as empty as this one did.
func directBurst(ctx context.Context, b *testing.B, f *fleet.Fleet, ns string, n int) *burst {
	r := newBurst(false)
	createInMembers(b, f, ns)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	followMemberDeployments(watchCtx, b, f, ns, r)
	time.Sleep(time.Second) // the watches are open
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(f.Members()))
	for _, m := range f.Members() {
		wg.Add(1)
		go func(m *fleet.Member) {
			defer wg.Done()
			for i := range n {
				name := fmt.Sprintf("w%03d", i)
				at := time.Now()
				if err := fleet.ApplyTo(ctx, m.Client, []byte(milliDeployment(ns, name, 2, "10m"))); err != nil {
					errs <- fmt.Errorf("%s: %w", m.Spec.Name, err)
					return
				}
				r.mark(name, m.Spec.Name, func(p *burstPair) *time.Time { return &p.applied }, at)
			}
		}(m)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	waitBurstReady(b, r, n*len(f.Members()), start)
	stop()

	for _, m := range f.Members() {
		if err := m.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for _, m := range f.Members() {
		for {
			err := m.Client.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("namespace %s still in %s 5 minutes after its deletion: %v", ns, m.Spec.Name, err)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	return r
}

// hubBurst applies the Deployments to the hub, in a federated namespace
// whose policy duplicates each over the three members, and waits for all of them Ready in every member.
func hubBurst(ctx context.Context, b *testing.B, f *fleet.Fleet, ns string, n int) *burst {
	r := newBurst(true)
	if err := f.Apply(ctx, []byte(federatedNamespace(ns, "{replicaSchedulingType: Duplicated}"))); err != nil {
		b.Fatal(err)
	}
	// The namespace is made in the members beforehand, as for the direct
	// run: what is measured is the Deployments' way, not the namespace's.
	createInMembers(b, f, ns)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	followMemberDeployments(watchCtx, b, f, ns, r)
	hub, err := client.NewWithWatch(f.Hub.RESTConfig(), client.Options{Scheme: f.Hub.Client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	members := f.Members()
	go follow(watchCtx, hub, &workv1alpha1.ResourceBindingList{}, []client.ListOption{client.InNamespace(ns)}, func(o runtime.Object, at time.Time) {
		rb, ok := o.(*workv1alpha1.ResourceBinding)
		if !ok || rb.Spec.Resource.Kind != "Deployment" {
			return
		}
		for _, m := range members {
			r.mark(rb.Spec.Resource.Name, m.Spec.Name, func(p *burstPair) *time.Time { return &p.binding }, at)
		}
		if conditions.IsTrue(rb, workv1alpha1.ConditionScheduled) {
			for _, c := range rb.Spec.Clusters {
				r.mark(rb.Spec.Resource.Name, c.Name, func(p *burstPair) *time.Time { return &p.placed }, at)
			}
		}
	})
	go follow(watchCtx, hub, &workv1alpha1.WorkList{}, nil, func(o runtime.Object, at time.Time) {
		w, ok := o.(*workv1alpha1.Work)
		if !ok {
			return
		}
		member, inExecution := strings.CutPrefix(w.GetNamespace(), clusterv1alpha1.ExecutionNamespacePrefix)
		if !inExecution {
			return
		}
		for _, id := range workDeployments(w, ns) {
			r.mark(id, member, func(p *burstPair) *time.Time { return &p.work }, at)
		}
	})
	time.Sleep(time.Second) // the watches are open
	start := time.Now()
	for i := range n {
		name := fmt.Sprintf("w%03d", i)
		at := time.Now()
		if err := f.Apply(ctx, []byte(milliDeployment(ns, name, 2, "10m"))); err != nil {
			b.Fatal(err)
		}
		for _, m := range members {
			r.mark(name, m.Spec.Name, func(p *burstPair) *time.Time { return &p.applied }, at)
		}
	}
	waitBurstReady(b, r, n*len(members), start)
	stop()
	if err := f.Hub.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	return r
}

// createInMembers makes namespace ns in every member, straight.
func createInMembers(b *testing.B, f *fleet.Fleet, ns string) {
	for _, m := range f.Members() {
		if err := m.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
	}
}

// workDeployments names the Deployments of ns a Work carries.
func workDeployments(w *workv1alpha1.Work, ns string) []string {
	var out []string
	for _, m := range w.Spec.Workload.Manifests {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(m.Raw); err != nil {
			continue
		}
		if u.GetKind() == "Deployment" && u.GetNamespace() == ns {
			out = append(out, u.GetName())
		}
	}
	return out
}

// waitBurstReady waits until want pairs are Ready and records the span.
func waitBurstReady(b *testing.B, r *burst, want int, start time.Time) {
	deadline := time.Now().Add(10 * time.Minute)
	for r.ready() < want {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d (Deployment, member) pairs Ready after 10 minutes", r.ready(), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.span = time.Since(start)
}
