package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// A hung member delays only its own Works (issue 14): its kube-apiserver
// is stopped with SIGSTOP, so its port accepts connections and nothing
// answers — the case that holds a worker for a whole timeout per request.
var _ = Describe("Member isolation", Label(slowLabel), func() {
	It("keeps the rest of the fleet at normal latency while one member's apiserver hangs, and catches the hung member up when it answers", func(ctx SpecContext) {
		const ns, workloads = "isolation", 6
		federatedNamespace(ctx, ns)
		hung, others := theFleet.Member("member1"), []*fleet.Member{theFleet.Member("member2"), theFleet.Member("member3")}

		By("placing workloads on every member")
		docs := []string{isolationPolicy(ns, "everywhere", "member1, member2, member3")}
		for i := range workloads {
			docs = append(docs, isolationDeployment(ns, fmt.Sprintf("old-%d", i), "everywhere", "v1"))
		}
		Expect(theFleet.Apply(ctx, []byte(strings.Join(docs, "\n---\n")))).To(Succeed())
		for _, m := range append([]*fleet.Member{hung}, others...) {
			eventually(ctx, func() string { return versionsReady(ctx, m, ns, "v1", workloads) }).
				WithTimeout(2*timeUnit).Should(BeEmpty(), "every workload Ready in %s", m.Spec.Name)
		}

		// CAPI would judge the member unreachable and failover would move
		// the workloads away; that is the failover specs' business. Paused,
		// the member keeps its placements and only the execution path is
		// exercised.
		Expect(theFleet.PauseCluster(ctx, hung, true)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { _ = theFleet.PauseCluster(ctx, hung, false) })
		By("freezing member1's kube-apiserver (SIGSTOP)")
		Expect(hung.FreezeAPIServer()).To(Succeed())
		thawed := false
		DeferCleanup(func() {
			if !thawed {
				_ = hung.ThawAPIServer()
			}
		})

		By("changing every workload and adding one for the healthy members only")
		frozenAt := time.Now()
		docs = []string{isolationPolicy(ns, "healthy", "member2, member3"), isolationDeployment(ns, "new", "healthy", "v2")}
		for i := range workloads {
			docs = append(docs, isolationDeployment(ns, fmt.Sprintf("old-%d", i), "everywhere", "v2"))
		}
		Expect(theFleet.Apply(ctx, []byte(strings.Join(docs, "\n---\n")))).To(Succeed())
		for _, m := range others {
			eventually(ctx, func() string { return versionsReady(ctx, m, ns, "v2", workloads+1) }).
				WithTimeout(timeUnit).Should(BeEmpty(), "every workload at v2 and Ready in %s", m.Spec.Name)
		}
		AddReportEntry("healthy members at v2 and Ready while member1 hangs", time.Since(frozenAt).Round(100*time.Millisecond).String())

		By("member1's Works say why they wait")
		eventually(ctx, func() string {
			return workReasons(ctx, hung, ns, workloads)
		}).WithTimeout(timeUnit).Should(Equal(strings.Repeat(workv1alpha1.WorkReasonMemberUnreachable+" ", workloads)))

		By("thawing member1 (SIGCONT): it catches up")
		Expect(hung.ThawAPIServer()).To(Succeed())
		thawed = true
		thawedAt := time.Now()
		eventually(ctx, func() string { return versionsReady(ctx, hung, ns, "v2", workloads) }).
			WithTimeout(2*timeUnit).Should(BeEmpty(), "every old workload at v2 and Ready in member1")
		eventually(ctx, func() string { return workReasons(ctx, hung, ns, workloads) }).
			WithTimeout(timeUnit).Should(Equal(strings.Repeat(workv1alpha1.WorkReasonApplied+" ", workloads)))
		AddReportEntry("member1 caught up after SIGCONT", time.Since(thawedAt).Round(100*time.Millisecond).String())
	}, SpecTimeout(8*time.Minute))
})

func isolationPolicy(ns, name, members string) string {
	return fmt.Sprintf(`
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: %s, namespace: %s}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {policy: %s}}}]
  placement:
    clusterAffinity: {clusterNames: [%s]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
`, name, ns, name, members)
}

// isolationDeployment is one 10m-CPU replica whose Pod template carries
// version, so that a new version changes every member's Work.
func isolationDeployment(ns, name, policy, version string) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s, labels: {policy: %s}}
spec:
  replicas: 1
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}, annotations: {version: %s}}
    spec:
      containers:
      - {name: app, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: 10m}}}
`, name, ns, policy, name, name, version)
}

// versionsReady lists the namespace's Deployments in m that are not yet at
// version and Ready; empty when want of them are.
func versionsReady(ctx context.Context, m *fleet.Member, ns, version string, want int) string {
	list := &appsv1.DeploymentList{}
	if err := m.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var missing []string
	done := 0
	for _, d := range list.Items {
		switch {
		case d.Spec.Template.Annotations["version"] != version:
			missing = append(missing, d.Name+" at "+d.Spec.Template.Annotations["version"])
		case d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas != 1 || d.Status.ReadyReplicas != 1 || d.Status.Replicas != 1:
			missing = append(missing, d.Name+" rolling out")
		default:
			done++
		}
	}
	if done == want {
		return ""
	}
	return fmt.Sprintf("%d of %d ready at %s; %v", done, want, version, missing)
}

// workReasons is the Applied reason of each of m's Works of the
// namespace's bindings, sorted by Work name.
func workReasons(ctx context.Context, m *fleet.Member, ns string, want int) string {
	works := &workv1alpha1.WorkList{}
	if err := theFleet.Hub.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(m.Spec.Name))); err != nil {
		return err.Error()
	}
	var out strings.Builder
	n := 0
	for i := range works.Items {
		w := &works.Items[i]
		if w.Annotations[workv1alpha1.BindingNamespaceAnnotation] != ns {
			continue
		}
		n++
		out.WriteString(conditions.GetReason(w, workv1alpha1.WorkApplied) + " ")
	}
	if n != want {
		return fmt.Sprintf("%d Works, want %d: %s", n, want, out.String())
	}
	return out.String()
}
