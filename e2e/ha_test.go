package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// haEvictionRate is the eviction rate of the HA pair: slow enough that the
// leader dies with evictions still to come.
const haEvictionRate = 0.2

// evictionLog records, polling the bindings of a namespace, each time a
// binding loses a member, and whether it ever gets it back.
type evictionLog struct {
	mu      sync.Mutex
	had     map[string]bool                         // binding -> member in spec.clusters at the last poll
	removed map[string][]time.Time                  // binding -> times it lost the member
	present map[string][]workv1alpha1.TargetCluster // binding -> last spec.clusters
}

func (l *evictionLog) poll(list *workv1alpha1.ResourceBindingList, member string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range list.Items {
		on := slices.ContainsFunc(b.Spec.Clusters, func(t workv1alpha1.TargetCluster) bool { return t.Name == member })
		if was, seen := l.had[b.Name]; seen && was && !on {
			l.removed[b.Name] = append(l.removed[b.Name], now)
		}
		l.had[b.Name] = on
		l.present[b.Name] = b.Spec.Clusters
	}
}

// times are the evictions in order.
func (l *evictionLog) times() []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []time.Time
	for _, ts := range l.removed {
		out = append(out, ts...)
	}
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

var _ = Describe("HA", Label(slowLabel), Ordered, func() {
	It("hands over to the standby when the leader is killed mid-eviction: the evictions finish at the configured rate, none twice, none lost", func(ctx SpecContext) {
		const ns, n = "ha", 8
		federatedNamespace(ctx, ns)
		var manifests strings.Builder
		fmt.Fprintf(&manifests, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: settings, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: ha}}}]
  placement: {clusterAffinity: {clusterNames: [member1, member2]}}
`, ns)
		for i := range n {
			fmt.Fprintf(&manifests, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings-%d, namespace: %s, labels: {app: ha}}\ndata: {i: \"%d\"}\n", i, ns, i)
		}
		Expect(theFleet.Apply(ctx, []byte(manifests.String()))).To(Succeed())
		list := func() *workv1alpha1.ResourceBindingList {
			l := &workv1alpha1.ResourceBindingList{}
			Expect(theFleet.Hub.Client.List(ctx, l, client.InNamespace(ns))).To(Succeed())
			return l
		}
		eventually(ctx, func(g Gomega) {
			l := list()
			g.Expect(l.Items).To(HaveLen(n))
			for _, b := range l.Items {
				g.Expect(placementOfBinding(&b)).To(Equal("member1:0 member2:0"), b.Name)
			}
		}).WithTimeout(2 * timeUnit).Should(Succeed())

		By("running flotilla-manager as an HA pair")
		Expect(theFleet.Hub.StartHA(ctx, 6*time.Second, 4*time.Second, time.Second,
			fmt.Sprintf("--resource-eviction-rate=%g", haEvictionRate))).To(Succeed())
		DeferCleanup(func(ctx SpecContext) {
			flotilla("taint", "member2", "maintenance.example/ha-")
			Expect(theFleet.Hub.StopHA(ctx)).To(Succeed())
		})

		log := &evictionLog{had: map[string]bool{}, removed: map[string][]time.Time{}, present: map[string][]workv1alpha1.TargetCluster{}}
		pollCtx, stopPolling := context.WithCancel(ctx)
		defer stopPolling()
		go func() {
			defer GinkgoRecover()
			for pollCtx.Err() == nil {
				l := &workv1alpha1.ResourceBindingList{}
				if err := theFleet.Hub.Client.List(pollCtx, l, client.InNamespace(ns)); err == nil {
					log.poll(l, "member2", time.Now())
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()

		By("tainting member2 NoExecute: its bindings are evicted one by one")
		Expect(flotilla("taint", "member2", "maintenance.example/ha:NoExecute")).To(ContainSubstring("added"))
		eventually(ctx, func() int { return len(log.times()) }).WithTimeout(timeUnit).Should(BeNumerically(">=", 3))

		By("killing the leader")
		Expect(theFleet.Hub.KillLeader()).To(Succeed())
		killed := time.Now()
		before := len(log.times())
		Expect(before).To(BeNumerically("<", n), "every eviction was done before the leader died; nothing to hand over")

		eventually(ctx, func() int { return len(log.times()) }).WithTimeout(3*timeUnit).Should(Equal(n), "evictions after the leader died")
		Consistently(ctx, func() int { return len(log.times()) }).WithTimeout(5 * time.Second).Should(Equal(n))
		stopPolling()

		for name, ts := range log.removed {
			Expect(ts).To(HaveLen(1), "%s evicted %d times", name, len(ts))
		}
		for _, b := range list().Items {
			Expect(placementOfBinding(&b)).To(Equal("member1:0"), "%s after the handover", b.Name)
		}
		times := log.times()
		after := times[before:]
		takeover := after[0].Sub(killed)
		rate := "one eviction"
		if len(after) > 1 {
			achieved := float64(len(after)-1) / after[len(after)-1].Sub(after[0]).Seconds()
			rate = fmt.Sprintf("%.3f/s", achieved)
			// Polled every 100 ms: a quarter of slack over the configured rate.
			Expect(achieved).To(BeNumerically("<=", haEvictionRate*1.25), "the standby evicted faster than the configured rate")
		}
		AddReportEntry("HA handover mid-eviction", fmt.Sprintf(
			"%d of %d evicted before the leader was killed; the standby's first eviction %s after the kill (lease 6s), the other %d at %s (configured %g/s); each binding evicted once",
			before, n, takeover.Round(100*time.Millisecond), len(after)-1, rate, haEvictionRate))
	}, SpecTimeout(10*time.Minute))
})

func placementOfBinding(b *workv1alpha1.ResourceBinding) string {
	var parts []string
	for _, c := range b.Spec.Clusters {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Name, c.Replicas))
	}
	return strings.Join(parts, " ")
}
