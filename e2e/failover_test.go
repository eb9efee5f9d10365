package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/cli"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// failoverGrace is the --failover-grace-period of the suite's manager
// (fleet.DefaultManagerArgs).
const failoverGrace = 30 * time.Second

// failoverWorkload is a Deployment of replicas × 100m and its Service in ns,
// propagated to fo1 and fo2 by static weights fo1:fo2 = w1:w2 with the given
// failover and tolerations (YAML flow mappings, may be empty).
func failoverWorkload(ns, name string, replicas, w1, w2 int, failover, tolerations string) string {
	if failover != "" {
		failover = "\n  failover: " + failover
	}
	if tolerations != "" {
		tolerations = "\n    clusterTolerations: " + tolerations
	}
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
      - {name: web, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 100m}}}
---
apiVersion: v1
kind: Service
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  selector: {app: %[2]s}
  ports: [{port: 80}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: %[2]s}
  - {apiVersion: v1, kind: Service, name: %[2]s}%[6]s
  placement:
    clusterAffinity: {clusterNames: [fo1, fo2]}%[7]s
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [fo1]}, weight: %[4]d}
        - {targetCluster: {clusterNames: [fo2]}, weight: %[5]d}
`, ns, name, replicas, w1, w2, failover, tolerations)
}

// flotilla runs kubectl-flotilla against the hub, in-process.
func flotilla(args ...string) string {
	cmd := cli.NewRootCommand()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append(args, "--kubeconfig", theFleet.Hub.Kubeconfig()))
	Expect(cmd.Execute()).To(Succeed(), "kubectl flotilla %s: %s", strings.Join(args, " "), out)
	return out.String()
}

// memberTaint returns the member's taint of key and effect, or nil.
func memberTaint(ctx context.Context, m *fleet.Member, key string, effect corev1.TaintEffect) *corev1.Taint {
	mc, err := memberOf(ctx, m)
	if err != nil || mc == nil {
		return nil
	}
	for i := range mc.Spec.Taints {
		if mc.Spec.Taints[i].Key == key && mc.Spec.Taints[i].Effect == effect {
			return &mc.Spec.Taints[i]
		}
	}
	return nil
}

// placementOf renders a Deployment's binding placement, e.g. "fo1:4 fo2:2".
func placementOf(ctx context.Context, ns, name string) string {
	b := deploymentBinding(ctx, ns, name)
	if b == nil {
		return "no binding"
	}
	var parts []string
	for _, c := range b.Spec.Clusters {
		parts = append(parts, fmt.Sprintf("%s:%d", c.Name, c.Replicas))
	}
	return strings.Join(parts, " ")
}

// firstTimes records, polling every 200 ms, when each named condition first held.
type firstTimes struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func watchFirst(ctx context.Context, every time.Duration, checks map[string]func() bool) *firstTimes {
	ft := &firstTimes{seen: map[string]time.Time{}}
	go func() {
		defer GinkgoRecover()
		for ctx.Err() == nil {
			// Everything first seen in one round is stamped with the
			// round's start: their order within it is not known.
			round := time.Now()
			for name, check := range checks {
				ft.mu.Lock()
				_, done := ft.seen[name]
				ft.mu.Unlock()
				if !done && check() {
					ft.mu.Lock()
					ft.seen[name] = round
					ft.mu.Unlock()
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(every):
			}
		}
	}()
	return ft
}

func (ft *firstTimes) at(name string) (time.Time, bool) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	t, ok := ft.seen[name]
	return t, ok
}

// gone: the Deployment is absent from the member or being deleted there.
func gone(ctx context.Context, m *fleet.Member, ns, name string) func() bool {
	return func() bool {
		d := memberDeployment(ctx, m, ns, name)
		return d == nil || !d.DeletionTimestamp.IsZero()
	}
}

func readyAt(ctx context.Context, m *fleet.Member, ns, name string, replicas int32) func() bool {
	return func() bool {
		d := memberDeployment(ctx, m, ns, name)
		return d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas == replicas && d.Status.ReadyReplicas == replicas
	}
}

func scaledTo(ctx context.Context, m *fleet.Member, ns, name string, replicas int32) func() bool {
	return func() bool {
		d := memberDeployment(ctx, m, ns, name)
		return d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas == replicas
	}
}

var _ = Describe("Failover", Ordered, func() {
	var fo1, fo2 *fleet.Member

	BeforeAll(func(ctx SpecContext) {
		labels := func(zone string) map[string]string {
			return map[string]string{fleet.EnrolLabel: "true", "topology.kubernetes.io/region": "eu-central", "topology.kubernetes.io/zone": zone}
		}
		specs := []fleet.MemberSpec{
			{Name: "fo1", Namespace: "failover-clusters", Labels: labels("eu-central-a")},
			{Name: "fo2", Namespace: "failover-clusters", Labels: labels("eu-central-b")},
		}
		members := make([]*fleet.Member, len(specs))
		errs := make(chan error, len(specs))
		for i, spec := range specs {
			go func(i int, spec fleet.MemberSpec) {
				var err error
				members[i], err = theFleet.AddMember(ctx, spec)
				errs <- err
			}(i, spec)
		}
		for range specs {
			Expect(<-errs).NotTo(HaveOccurred())
		}
		fo1, fo2 = members[0], members[1]
		DeferCleanup(func(ctx SpecContext) {
			for _, m := range members {
				_ = theFleet.DeleteCluster(ctx, m)
			}
			for _, m := range members {
				eventually(ctx, func() bool { mc, _ := memberOf(ctx, m); return mc == nil }).WithTimeout(3 * timeUnit).Should(BeTrue())
				theFleet.RemoveMember(m)
			}
		})
		for _, m := range members {
			readyMember(ctx, m)
			eventually(ctx, func(g Gomega) {
				mc, err := memberOf(ctx, m)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(mc.Status.CapacityModel).NotTo(BeNil(), "capacity model of %s", m.Name())
			}).WithTimeout(2 * timeUnit).Should(Succeed())
		}
	}, NodeTimeout(6*time.Minute))

	It("moves fleet-web off a member whose apiserver stops: NoSchedule at once, NoExecute after the grace period, 6 Ready on fo1; untaints on restart and fails back to 4 + 2", func(ctx SpecContext) {
		federatedNamespace(ctx, "failover")
		Expect(theFleet.Apply(ctx, []byte(failoverWorkload("failover", "fleet-web", 6, 2, 1, "{cluster: {purgeMode: Gracefully, failback: true}}", "")))).To(Succeed())
		placement, err := theFleet.WaitWorkloadReady(ctx, "failover", "Deployment", "fleet-web", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placement).To(Equal("fo1:4 fo2:2"))

		// Stopping the apiserver fails two inputs: the test control plane
		// provider reports ControlPlaneAvailable False within 5 s (it probes
		// /readyz), Cluster API's RemoteConnectionProbe after its 20 s grace.
		// Each gets its NoSchedule taint at once and its NoExecute taint the
		// grace period later; whichever NoExecute comes first evicts.
		taint := func(key string, effect corev1.TaintEffect) func() bool {
			return func() bool { return memberTaint(ctx, fo2, key, effect) != nil }
		}
		const (
			unreachable = clusterv1alpha1.TaintUnreachable
			notReady    = clusterv1alpha1.TaintNotReady
		)
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		seen := watchFirst(watchCtx, 200*time.Millisecond, map[string]func() bool{
			"probe False": func() bool {
				return clusterCondition(ctx, "fo2", capiv1.ClusterRemoteConnectionProbeCondition)() == metav1.ConditionFalse
			},
			"control plane False": func() bool {
				return clusterCondition(ctx, "fo2", capiv1.ClusterControlPlaneAvailableCondition)() == metav1.ConditionFalse
			},
			unreachable + ":NoSchedule": taint(unreachable, corev1.TaintEffectNoSchedule),
			unreachable + ":NoExecute":  taint(unreachable, corev1.TaintEffectNoExecute),
			notReady + ":NoSchedule":    taint(notReady, corev1.TaintEffectNoSchedule),
			notReady + ":NoExecute":     taint(notReady, corev1.TaintEffectNoExecute),
			"evicted":                   func() bool { return placementOf(ctx, "failover", "fleet-web") == "fo1:6" },
			"6 Ready on fo1":            readyAt(ctx, fo1, "failover", "fleet-web", 6),
		})
		first := func(names ...string) (time.Time, string) {
			var at time.Time
			var which string
			for _, n := range names {
				if t, ok := seen.at(n); ok && (at.IsZero() || t.Before(at)) {
					at, which = t, n
				}
			}
			return at, which
		}

		By("stopping fo2's apiserver")
		stopped := time.Now()
		Expect(fo2.StopAPIServer()).To(Succeed())
		restartedOnce := false
		DeferCleanup(func(ctx SpecContext) {
			if !restartedOnce {
				_ = fo2.StartAPIServer(ctx)
			}
		})
		eventually(ctx, func() time.Time {
			t, _ := first(unreachable+":NoSchedule", notReady+":NoSchedule")
			return t
		}).WithTimeout(3 * timeUnit).ShouldNot(BeZero())
		Expect(placementOf(ctx, "failover", "fleet-web")).To(Equal("fo1:4 fo2:2"), "NoSchedule alone moves nothing")

		By("NoExecute after the grace period, and fleet-web's 6 replicas Ready on fo1")
		eventually(ctx, func() bool { _, ok := seen.at("6 Ready on fo1"); return ok }).WithTimeout(3 * timeUnit).Should(BeTrue())
		eventually(ctx, func() bool { _, ok := seen.at(unreachable + ":NoSchedule"); return ok }).WithTimeout(3*timeUnit).
			Should(BeTrue(), "RemoteConnectionProbe=False taints the member unreachable:NoSchedule")
		mc, err := memberOf(ctx, fo2)
		Expect(err).NotTo(HaveOccurred())
		Expect(conditions.Get(mc, clusterv1alpha1.ConditionReachable).Status).To(Equal(metav1.ConditionFalse))
		noSched, _ := first(unreachable+":NoSchedule", notReady+":NoSchedule")
		noExec, byKey := first(unreachable+":NoExecute", notReady+":NoExecute")
		Expect(noExec.IsZero()).To(BeFalse(), "no NoExecute taint before the eviction")
		for _, key := range []string{unreachable, notReady} {
			ns, ok1 := seen.at(key + ":NoSchedule")
			ne, ok2 := seen.at(key + ":NoExecute")
			if ok1 && ok2 {
				Expect(ne.Sub(ns)).To(BeNumerically("~", failoverGrace, 3*time.Second), "%s: NoExecute comes the grace period after NoSchedule", key)
			}
		}
		evicted, _ := seen.at("evicted")
		ready, _ := seen.at("6 Ready on fo1")
		Expect(evicted.Before(noExec)).To(BeFalse(), "evicted before any NoExecute taint")
		timeline := func(name string) string {
			if t, ok := seen.at(name); ok {
				return t.Sub(stopped).Round(100 * time.Millisecond).String()
			}
			return "-"
		}
		AddReportEntry("failover timeline (apiserver stopped at 0)", fmt.Sprintf(
			"ControlPlaneAvailable=False %s, RemoteConnectionProbe=False %s; not-ready:NoSchedule %s, :NoExecute %s; unreachable:NoSchedule %s, :NoExecute %s; evicted (by %s) %s; 6 Ready on fo1 %s",
			timeline("control plane False"), timeline("probe False"), timeline(notReady+":NoSchedule"), timeline(notReady+":NoExecute"),
			timeline(unreachable+":NoSchedule"), timeline(unreachable+":NoExecute"), byKey, timeline("evicted"), timeline("6 Ready on fo1")))
		AddReportEntry("MEASURE NoExecute → first evicted binding Ready elsewhere (controller overhead + kwok start)",
			fmt.Sprintf("%s (eviction %s after NoExecute; NoSchedule → NoExecute %s for a grace of %s)", ready.Sub(noExec).Round(100*time.Millisecond),
				evicted.Sub(noExec).Round(100*time.Millisecond), noExec.Sub(noSched).Round(100*time.Millisecond), failoverGrace))
		b := deploymentBinding(ctx, "failover", "fleet-web")
		Expect(b.Annotations).To(HaveKeyWithValue(workv1alpha1.FailbackAnnotation, "fo2"))

		By("restarting fo2's apiserver after an outage of over a minute (Cluster API reconnects only after disconnecting)")
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(stopped.Add(75 * time.Second))):
		}
		Expect(fo2.StartAPIServer(ctx)).To(Succeed())
		restartedOnce = true
		restarted := time.Now()
		eventually(ctx, func() []corev1.Taint {
			mc, _ := memberOf(ctx, fo2)
			if mc == nil {
				return []corev1.Taint{{Key: "no member"}}
			}
			return mc.Spec.Taints
		}).WithTimeout(3 * timeUnit).Should(BeEmpty())
		untainted := time.Since(restarted)

		By("failing back to 4 + 2")
		placement, err = theFleet.WaitWorkloadReady(ctx, "failover", "Deployment", "fleet-web", 4*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		eventually(ctx, func() string { return placementOf(ctx, "failover", "fleet-web") }).WithTimeout(4 * timeUnit).Should(Equal("fo1:4 fo2:2"))
		eventually(ctx, readyReplicas(ctx, fo2, "failover", "fleet-web")).WithTimeout(4 * timeUnit).Should(Equal("2/2"))
		eventually(ctx, readyReplicas(ctx, fo1, "failover", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("4/4"))
		AddReportEntry("recovery", fmt.Sprintf("apiserver restarted → taints removed %s, → back to fo1:4 fo2:2 with 2 Ready on fo2 %s",
			untainted.Round(100*time.Millisecond), time.Since(restarted).Round(100*time.Millisecond)))
	}, SpecTimeout(15*time.Minute))

	It("evicts nothing while every member's apiserver is unreachable for longer than the grace period, and keeps every placement and Pod after recovery", Label(slowLabel), func(ctx SpecContext) {
		federatedNamespace(ctx, "partition")
		Expect(theFleet.Apply(ctx, []byte(failoverWorkload("partition", "fleet-web", 6, 2, 1, "{cluster: {purgeMode: Gracefully, failback: true}}", "")))).To(Succeed())
		placement, err := theFleet.WaitWorkloadReady(ctx, "partition", "Deployment", "fleet-web", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placement).To(Equal("fo1:4 fo2:2"))
		podUIDs := func(m *fleet.Member) []string {
			pods := &corev1.PodList{}
			Expect(m.Client.List(ctx, pods, client.InNamespace("partition"))).To(Succeed())
			var uids []string
			for _, p := range pods.Items {
				uids = append(uids, string(p.UID))
			}
			return uids
		}
		before := map[string][]string{"fo1": podUIDs(fo1), "fo2": podUIDs(fo2)}
		Expect(before["fo1"]).To(HaveLen(4))
		Expect(before["fo2"]).To(HaveLen(2))

		By("stopping every member's apiserver")
		all := theFleet.Members()
		stopped := time.Now()
		for _, m := range all {
			Expect(m.StopAPIServer()).To(Succeed())
		}
		restarted := false
		restartAll := func(ctx context.Context) {
			for _, m := range all {
				Expect(m.StartAPIServer(ctx)).To(Succeed(), "restart %s", m.Name())
			}
			restarted = true
		}
		DeferCleanup(func(ctx SpecContext) {
			if !restarted {
				restartAll(ctx)
			}
		})
		// Every member tainted NoSchedule, then a grace period and more:
		// long enough for any NoExecute taint to have evicted.
		var lastTainted time.Time
		for _, m := range all {
			eventually(ctx, func() bool {
				return memberTaint(ctx, m, clusterv1alpha1.TaintUnreachable, corev1.TaintEffectNoSchedule) != nil ||
					memberTaint(ctx, m, clusterv1alpha1.TaintNotReady, corev1.TaintEffectNoSchedule) != nil
			}).WithTimeout(3*timeUnit).Should(BeTrue(), "%s tainted NoSchedule", m.Name())
		}
		lastTainted = time.Now()
		By("holding the outage for the grace period and 20 s more")
		Consistently(ctx, func(g Gomega) {
			b := deploymentBinding(ctx, "partition", "fleet-web")
			g.Expect(b).NotTo(BeNil())
			g.Expect(placementOf(ctx, "partition", "fleet-web")).To(Equal("fo1:4 fo2:2"), "a binding lost a member during the outage")
			g.Expect(b.Spec.GracefulEvictionTasks).To(BeEmpty(), "an eviction began during the outage")
			for _, m := range []string{"fo1", "fo2"} {
				works := &workv1alpha1.WorkList{}
				g.Expect(theFleet.Hub.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(m)))).To(Succeed())
				g.Expect(works.Items).NotTo(BeEmpty(), "%s's Works", m)
				for _, w := range works.Items {
					g.Expect(w.DeletionTimestamp.IsZero()).To(BeTrue(), "Work %s/%s deleted during the outage", w.Namespace, w.Name)
				}
			}
		}).WithTimeout(failoverGrace + 20*time.Second).WithPolling(2 * time.Second).Should(Succeed())
		AddReportEntry("full disruption", fmt.Sprintf("%d members down for %s, the last tainted NoSchedule %s after the stop; no eviction",
			len(all), time.Since(stopped).Round(time.Second), lastTainted.Sub(stopped).Round(time.Second)))

		By("restarting every apiserver: untainted, the same placement, the same Pods")
		restartAll(ctx)
		back := time.Now()
		for _, m := range all {
			eventually(ctx, func() []corev1.Taint {
				mc, _ := memberOf(ctx, m)
				if mc == nil {
					return []corev1.Taint{{Key: "no member"}}
				}
				return mc.Spec.Taints
			}).WithTimeout(4*timeUnit).Should(BeEmpty(), "%s untainted", m.Name())
		}
		_, err = theFleet.WaitWorkloadReady(ctx, "partition", "Deployment", "fleet-web", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placementOf(ctx, "partition", "fleet-web")).To(Equal("fo1:4 fo2:2"))
		Expect(podUIDs(fo1)).To(ConsistOf(before["fo1"]), "fo1's Pods were replaced")
		Expect(podUIDs(fo2)).To(ConsistOf(before["fo2"]), "fo2's Pods were replaced")
		AddReportEntry("recovery from full disruption", fmt.Sprintf("apiservers restarted → every member untainted and fleet-web Ready as before in %s", time.Since(back).Round(time.Second)))
	}, SpecTimeout(15*time.Minute))

	It("evicts on a manual NoExecute taint: Gracefully deletes the old copy after the new one is Ready, Directly before placing it, and a 60 s toleration waits 60 s", Label(slowLabel), func(ctx SpecContext) {
		federatedNamespace(ctx, "failover-purge")
		Expect(theFleet.Apply(ctx, []byte(
			failoverWorkload("failover-purge", "grace-web", 4, 1, 1, "{cluster: {purgeMode: Gracefully}}", "")+"---"+
				failoverWorkload("failover-purge", "direct-web", 4, 1, 1, "{cluster: {purgeMode: Directly}}", "")+"---"+
				failoverWorkload("failover-purge", "tolerant-web", 2, 1, 1, "", "[{key: maintenance.example/down, operator: Exists, effect: NoExecute, tolerationSeconds: 60}]")))).To(Succeed())
		for _, name := range []string{"grace-web", "direct-web", "tolerant-web"} {
			_, err := theFleet.WaitWorkloadReady(ctx, "failover-purge", "Deployment", name, 3*timeUnit)
			Expect(err).NotTo(HaveOccurred(), name)
		}
		Expect(placementOf(ctx, "failover-purge", "grace-web")).To(Equal("fo1:2 fo2:2"))

		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		seen := watchFirst(watchCtx, 200*time.Millisecond, map[string]func() bool{
			"grace: old gone":     gone(ctx, fo2, "failover-purge", "grace-web"),
			"grace: new Ready":    readyAt(ctx, fo1, "failover-purge", "grace-web", 4),
			"direct: old gone":    gone(ctx, fo2, "failover-purge", "direct-web"),
			"direct: new placed":  scaledTo(ctx, fo1, "failover-purge", "direct-web", 4),
			"tolerant: evicted":   func() bool { return placementOf(ctx, "failover-purge", "tolerant-web") == "fo1:2" },
			"tolerant: new Ready": readyAt(ctx, fo1, "failover-purge", "tolerant-web", 2),
			"grace: task released": func() bool {
				b := deploymentBinding(ctx, "failover-purge", "grace-web")
				return b != nil && len(b.Spec.GracefulEvictionTasks) == 0 && len(b.Spec.Clusters) == 1
			},
		})
		Expect(flotilla("taint", "fo2", "maintenance.example/down:NoExecute")).To(ContainSubstring("added maintenance.example/down:NoExecute"))
		tainted := time.Now()
		DeferCleanup(func() { flotilla("taint", "fo2", "maintenance.example/down-") })
		added := memberTaint(ctx, fo2, "maintenance.example/down", corev1.TaintEffectNoExecute).TimeAdded.Time

		eventually(ctx, func() error {
			_, g1 := seen.at("grace: old gone")
			_, g2 := seen.at("direct: new placed")
			if g1 && g2 {
				return nil
			}
			var state []string
			for _, name := range []string{"grace-web", "direct-web"} {
				if b := deploymentBinding(ctx, "failover-purge", name); b != nil {
					state = append(state, fmt.Sprintf("%s: clusters %v, tasks %+v, observed %d of %d, conditions %+v",
						name, b.Spec.Clusters, b.Spec.GracefulEvictionTasks, b.Status.SchedulerObservedGeneration, b.Generation, b.Status.Conditions))
				}
			}
			return fmt.Errorf("old copy of grace-web gone: %v, direct-web placed on fo1: %v; %s", g1, g2, strings.Join(state, "; "))
		}).WithTimeout(3 * timeUnit).Should(Succeed())
		graceNew, _ := seen.at("grace: new Ready")
		graceOld, _ := seen.at("grace: old gone")
		directOld, _ := seen.at("direct: old gone")
		directNew, _ := seen.at("direct: new placed")
		Expect(graceNew.IsZero()).To(BeFalse())
		// At the resolution of the polling (200 ms): seen in the same round
		// is not out of order.
		Expect(graceOld.Before(graceNew)).To(BeFalse(), "Gracefully: fo2's copy went at %s, before fo1's was Ready at %s", graceOld, graceNew)
		Expect(directNew.Before(directOld)).To(BeFalse(), "Directly: fo2's copy went at %s, after fo1's was scaled at %s", directOld, directNew)
		AddReportEntry("purge modes (taint at 0)", fmt.Sprintf(
			"Gracefully: fo1 4 Ready %s, fo2 copy deleted %s; Directly: fo2 copy deleted %s, fo1 scaled to 4 %s",
			graceNew.Sub(tainted).Round(100*time.Millisecond), graceOld.Sub(tainted).Round(100*time.Millisecond),
			directOld.Sub(tainted).Round(100*time.Millisecond), directNew.Sub(tainted).Round(100*time.Millisecond)))

		By("the toleration of 60 s holds tolerant-web on fo2 until it runs out")
		Expect(placementOf(ctx, "failover-purge", "tolerant-web")).To(Equal("fo1:1 fo2:1"))
		eventually(ctx, func() bool { _, ok := seen.at("tolerant: new Ready"); return ok }).WithTimeout(3 * timeUnit).Should(BeTrue())
		tolEvicted, _ := seen.at("tolerant: evicted")
		Expect(tolEvicted.Sub(added)).To(BeNumerically(">=", 60*time.Second), "evicted before the toleration ran out")
		Expect(tolEvicted.Sub(added)).To(BeNumerically("<", 75*time.Second))
		AddReportEntry("toleration of 60 s", fmt.Sprintf("evicted %s after the taint's timeAdded", tolEvicted.Sub(added).Round(100*time.Millisecond)))
	}, SpecTimeout(8*time.Minute))

	It("drains a member whose CAPI Cluster is deleted to the other member before the member goes, holding its Machines meanwhile", Label(slowLabel), func(ctx SpecContext) {
		federatedNamespace(ctx, "failover-drain")
		Expect(theFleet.Apply(ctx, []byte(failoverWorkload("failover-drain", "drain-web", 4, 1, 1, "{cluster: {purgeMode: Gracefully}}", "")))).To(Succeed())
		_, err := theFleet.WaitWorkloadReady(ctx, "failover-drain", "Deployment", "drain-web", 3*timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placementOf(ctx, "failover-drain", "drain-web")).To(Equal("fo1:2 fo2:2"))
		eventually(ctx, func(g Gomega) {
			for _, node := range fo2.NodeNames() {
				machine := &capiv1.Machine{}
				g.Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: fo2.Spec.Namespace, Name: node}, machine)).To(Succeed())
				g.Expect(machine.Annotations).To(HaveKeyWithValue(clusterv1alpha1.DrainHookAnnotation, clusterv1alpha1.DrainHookOwner))
			}
		}).WithTimeout(timeUnit).Should(Succeed())

		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		seen := watchFirst(watchCtx, 200*time.Millisecond, map[string]func() bool{
			"Terminating": func() bool {
				mc, _ := memberOf(ctx, fo2)
				return mc != nil && conditions.IsTrue(mc, clusterv1alpha1.ConditionTerminating)
			},
			"held Machine": func() bool {
				machine := &capiv1.Machine{}
				err := theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: fo2.Spec.Namespace, Name: fo2.NodeNames()[0]}, machine)
				return err == nil && !machine.DeletionTimestamp.IsZero() && machine.Annotations[clusterv1alpha1.DrainHookAnnotation] != ""
			},
			"4 Ready on fo1": readyAt(ctx, fo1, "failover-drain", "drain-web", 4),
			"member gone":    func() bool { mc, err := memberOf(ctx, fo2); return err == nil && mc == nil },
		})
		deleted := time.Now()
		Expect(theFleet.DeleteCluster(ctx, fo2)).To(Succeed())
		eventually(ctx, func() bool { _, ok := seen.at("member gone"); return ok }).WithTimeout(5 * timeUnit).Should(BeTrue())
		ready, ok := seen.at("4 Ready on fo1")
		Expect(ok).To(BeTrue(), "fo2's member went before drain-web was Ready on fo1")
		memberGone, _ := seen.at("member gone")
		Expect(ready.Before(memberGone)).To(BeTrue())
		_, held := seen.at("held Machine")
		Expect(held).To(BeTrue(), "fo2's Machines were not held by the pre-drain hook while it drained")
		AddReportEntry("drain on Cluster deletion (deleted at 0)", fmt.Sprintf("4 Ready on fo1 %s, member removed %s",
			ready.Sub(deleted).Round(100*time.Millisecond), memberGone.Sub(deleted).Round(100*time.Millisecond)))
	}, SpecTimeout(8*time.Minute))
})
