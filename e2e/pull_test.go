package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	agentmanifests "github.com/flotilla-io/flotilla/addon/agent/manifests"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/e2e/fleet"
)

// Identities in a Pull-mode member's audit log.
const (
	// hubIdentity is flotilla-manager's own identity in Push-mode members;
	// in Pull mode it must be neither created nor used.
	hubIdentity = "system:serviceaccount:flotilla-system:flotilla-hub"
	// agentIdentity is flotilla-agent's ServiceAccount in the member.
	agentIdentity = "system:serviceaccount:flotilla-system:flotilla-agent"
	// agentProcess is the agent's key in theFleet.Processes().
	agentProcess = "edge/flotilla-agent"
)

var _ = Describe("Pull mode", Ordered, func() {
	var edge *fleet.Member
	var member *clusterv1alpha1.MemberCluster

	BeforeAll(func(ctx SpecContext) {
		var err error
		edge, err = theFleet.AddMember(ctx, fleet.MemberSpec{
			Name: "edge", Namespace: "pull-clusters",
			Labels: map[string]string{
				fleet.EnrolLabel: "true", "topology.kubernetes.io/region": "eu-central",
				"topology.kubernetes.io/zone": "eu-central-a", "flotilla.io/provider": "edge",
			},
			Annotations: map[string]string{clusterv1alpha1.SyncModeAnnotation: string(clusterv1alpha1.Pull)},
			NodePools:   []fleet.NodePool{{Name: "worker", Count: 2, CPU: "4", Memory: "16Gi", Pods: 110}},
		})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			Expect(theFleet.DeleteCluster(ctx, edge)).To(Succeed())
			eventually(ctx, func() (*clusterv1alpha1.MemberCluster, error) { return memberOf(ctx, edge) }).
				WithTimeout(3*timeUnit).Should(BeNil(), "the member of the deleted Cluster")
			theFleet.RemoveMember(edge)
		}, NodeTimeout(4*timeUnit))
		// Here rather than in the first spec, so that any spec can be focused alone.
		member = readyMember(ctx, edge)
	}, NodeTimeout(5*timeUnit))

	It("enrols a Pull-mode member whose agent reports it on the hub's credentials, while the hub never calls the member", func(ctx SpecContext) {
		member = readyMember(ctx, edge)
		Expect(member.Spec.SyncMode).To(Equal(clusterv1alpha1.Pull))
		Expect(member.Status.IdentitySecretRef).To(BeNil())

		By("the agent runs with the credentials the ClusterResourceSet delivered into the member")
		eventually(ctx, func() map[string]int { return theFleet.Processes() }).WithTimeout(timeUnit).Should(HaveKey(agentProcess))
		eventually(ctx, func(g Gomega) {
			mc, err := memberOf(ctx, edge)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mc.Status.KubernetesVersion).To(Equal(fleet.KubernetesVersion))
			g.Expect(mc.Status.APIEnablements).NotTo(BeEmpty())
			g.Expect(mc.Status.CapacityModel).NotTo(BeNil(), "the estimator's capacity model, carried by the agent")
			g.Expect(mc.Status.NodeSummary).To(Equal(&clusterv1alpha1.NodeSummary{TotalNum: 2, ReadyNum: 2}))
		}).WithTimeout(2 * timeUnit).Should(Succeed())
		lease := &coordinationv1.Lease{}
		Expect(theFleet.Hub.Client.Get(ctx, agentLeaseKey(member.Name), lease)).To(Succeed())
		Expect(*lease.Spec.LeaseDurationSeconds).To(BeEquivalentTo(clusterv1alpha1.AgentLeaseDurationSeconds))

		By("no request from the hub's Flotilla identity reached the member, and it has no such identity")
		// Who else appears in the member's audit log: fleet-admin is CAPI's
		// admin kubeconfig, used by Cluster API itself (ClusterCache probes,
		// the ClusterResourceSet that installed the add-ons) and by the local
		// fleet's own processes — that is Cluster API, not Flotilla. kwok,
		// kube-controller-manager and kube-scheduler use their own identities.
		fromHub := auditEvents(edge.AuditLog(), func(r auditEvent) bool {
			return r.User.Username == hubIdentity || strings.HasPrefix(r.UserAgent, "flotilla-manager")
		})
		Expect(fromHub).To(BeEmpty(), "requests of flotilla-manager in Pull-mode member edge")
		err := edge.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: "flotilla-hub"}, &corev1.ServiceAccount{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount flotilla-hub in a Pull-mode member: %v", err)
		Expect(auditEvents(edge.AuditLog(), func(r auditEvent) bool { return r.User.Username == agentIdentity })).NotTo(BeEmpty(),
			"the agent reads its member as its own ServiceAccount")
	}, SpecTimeout(5*timeUnit))

	It("runs the fleet-web lab like a Push member: divided 4 + 2 with member1, an override, status back in the binding, deletion", func(ctx SpecContext) {
		m1 := theFleet.Member("member1")
		federatedNamespace(ctx, "pull-lab")
		Expect(theFleet.Apply(ctx, []byte(pullLab("pull-lab", "shared")))).To(Succeed())

		By("4 replicas Ready in member1, 2 in the Pull-mode member, the edge copy overridden")
		eventually(ctx, readyReplicas(ctx, m1, "pull-lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("4/4"))
		eventually(ctx, readyReplicas(ctx, edge, "pull-lab", "fleet-web")).WithTimeout(2 * timeUnit).Should(Equal("2/2"))
		eventually(ctx, envValue(ctx, edge, "pull-lab", "fleet-web")).WithTimeout(timeUnit).Should(Equal("secondary"))
		Expect(envValue(ctx, m1, "pull-lab", "fleet-web")()).To(Equal("shared"))
		// The Service is its own binding and Work: it arrives on its own time.
		eventually(ctx, func() error {
			return edge.Client.Get(ctx, client.ObjectKey{Namespace: "pull-lab", Name: "fleet-web"}, &corev1.Service{})
		}).WithTimeout(timeUnit).Should(Succeed(), "Service fleet-web in edge")

		By("the binding carries the Pull member's status, as reported by its agent")
		placement, err := theFleet.WaitWorkloadReady(ctx, "pull-lab", "Deployment", "fleet-web", timeUnit)
		Expect(err).NotTo(HaveOccurred())
		Expect(placement).To(Equal("edge:2 member1:4"))
		rb := &workv1alpha1.ResourceBinding{}
		Expect(theFleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: "pull-lab", Name: "fleet-web-deployment"}, rb)).To(Succeed())
		var item *workv1alpha1.AggregatedStatusItem
		for i := range rb.Status.AggregatedStatus {
			if rb.Status.AggregatedStatus[i].ClusterName == "edge" {
				item = &rb.Status.AggregatedStatus[i]
			}
		}
		Expect(item).NotTo(BeNil(), "aggregated status of edge in %+v", rb.Status.AggregatedStatus)
		Expect(item.Applied).To(BeTrue())
		Expect(item.Health).To(Equal(workv1alpha1.ResourceHealthy))
		var st appsv1.DeploymentStatus
		Expect(json.Unmarshal(item.Status.Raw, &st)).To(Succeed())
		Expect(st.ReadyReplicas).To(BeEquivalentTo(2))

		By("the member's objects were written by the agent, as the field manager Push execution uses")
		d := memberDeployment(ctx, edge, "pull-lab", "fleet-web")
		Expect(managers(d)).To(ContainElement("flotilla/Apply"))
		Expect(auditEvents(edge.AuditLog(), func(r auditEvent) bool {
			return r.Verb == "patch" && r.ObjectRef != nil && r.ObjectRef.Namespace == "pull-lab" && r.ObjectRef.Name == "fleet-web" && r.User.Username != agentIdentity
		})).To(BeEmpty(), "applies of fleet-web in the Pull member by anyone but its agent")

		By("deleting the template and the policies removes everything from both members")
		deletePullLab(ctx, "pull-lab")
		eventually(ctx, func(g Gomega) {
			for _, m := range []*fleet.Member{m1, edge} {
				err := m.Client.Get(ctx, client.ObjectKey{Namespace: "pull-lab", Name: "fleet-web"}, &appsv1.Deployment{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment in %s: %v", m.Name(), err)
				err = m.Client.Get(ctx, client.ObjectKey{Namespace: "pull-lab", Name: "fleet-web"}, &corev1.Service{})
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service in %s: %v", m.Name(), err)
			}
		}).WithTimeout(2 * timeUnit).Should(Succeed())
	}, SpecTimeout(8*timeUnit))

	It("denies the agent's credentials on another member's execution namespace and on other MemberClusters", func(ctx SpecContext) {
		hub := agentHubClient(ctx, edge)
		own := clusterv1alpha1.ExecutionNamespace(member.Name)
		Expect(hub.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace(own))).To(Succeed())
		Expect(hub.Get(ctx, client.ObjectKey{Name: member.Name}, &clusterv1alpha1.MemberCluster{})).To(Succeed())

		m1 := readyMember(ctx, theFleet.Member("member1"))
		theirs := clusterv1alpha1.ExecutionNamespace(m1.Name)
		for what, err := range map[string]error{
			"list member1's Works":              hub.List(ctx, &workv1alpha1.WorkList{}, client.InNamespace(theirs)),
			"renew a Lease for member1":         hub.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: theirs, Name: clusterv1alpha1.AgentLeaseName}}),
			"read MemberCluster member1":        hub.Get(ctx, client.ObjectKey{Name: m1.Name}, &clusterv1alpha1.MemberCluster{}),
			"write member1's status":            hub.Status().Patch(ctx, m1, client.RawPatch("application/merge-patch+json", []byte(`{"status":{"kubernetesVersion":"v0"}}`))),
			"list MemberClusters":               hub.List(ctx, &clusterv1alpha1.MemberClusterList{}),
			"read Secrets in its own namespace": hub.List(ctx, &corev1.SecretList{}, client.InNamespace(own)),
		} {
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the agent's credentials must not %s; got %v", what, err)
		}
	}, SpecTimeout(2*timeUnit))

	It("confines the agent in its member to what its Works need, with the rights its ClusterResourceSet delivered", func(ctx SpecContext) {
		agent := agentMemberClient(ctx, edge)
		By("the agent's admission policy is in the member, from its ClusterResourceSet")
		Expect(edge.Client.Get(ctx, client.ObjectKey{Name: "flotilla-agent"}, &admissionregistrationv1.ValidatingAdmissionPolicy{})).To(Succeed())

		By("real requests as the agent's ServiceAccount are refused")
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent-escape"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
		token := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "agent-escape",
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "default"}}, Type: corev1.SecretTypeServiceAccountToken}
		for what, err := range map[string]error{
			"create a Pod in kube-system":           agent.Create(ctx, pod),
			"mint a token Secret":                   agent.Create(ctx, token),
			"read kube-system's Secrets":            agent.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system")),
			"bind cluster-admin":                    agent.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "agent-escape"}, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}, Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-agent"}}}),
			"write a webhook configuration":         agent.Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "agent-escape"}}),
			"create a ConfigMap in an unmanaged ns": agent.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "agent-escape"}}),
		} {
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the agent must not %s in its member; got %v", what, err)
		}
	}, SpecTimeout(2*timeUnit))

	It("keeps the member's workloads through a minute without the hub apiserver, reconnects, and applies a change made when the hub is back", Label(slowLabel), func(ctx SpecContext) {
		m1 := theFleet.Member("member1")
		federatedNamespace(ctx, "pull-outage")
		Expect(theFleet.Apply(ctx, []byte(outageWorkload("before")))).To(Succeed())
		for _, m := range []*fleet.Member{m1, edge} {
			eventually(ctx, readyReplicas(ctx, m, "pull-outage", "steady")).WithTimeout(2*timeUnit).Should(Equal("2/2"), m.Name())
		}
		agentPid := theFleet.Processes()[agentProcess]
		Expect(agentPid).NotTo(BeZero())
		hubPids := map[string]int{}
		for name, pid := range theFleet.Processes() {
			if strings.HasPrefix(name, "hub/") && !strings.HasSuffix(name, "/kube-apiserver") {
				hubPids[name] = pid
			}
		}

		By("stopping the hub's apiserver for a minute: the member keeps its workload and its agent keeps running")
		stopped := time.Now()
		Expect(theFleet.Hub.StopAPIServer()).To(Succeed())
		restarted := false
		DeferCleanup(func(ctx SpecContext) {
			if !restarted { // a failure above must not leave the suite without a hub
				Expect(theFleet.Hub.StartAPIServer(ctx)).To(Succeed())
			}
		})
		Consistently(ctx, func(g Gomega) {
			g.Expect(readyReplicas(ctx, edge, "pull-outage", "steady")()).To(Equal("2/2"))
			g.Expect(syscall.Kill(agentPid, 0)).To(Succeed(), "the agent process")
		}).WithPolling(5 * time.Second).WithTimeout(time.Minute).Should(Succeed())

		By("restarting it, and right away changing the workload on the hub")
		Expect(theFleet.Hub.StartAPIServer(ctx)).To(Succeed())
		restarted = true
		back := time.Now()
		eventually(ctx, func() error { return theFleet.Apply(ctx, []byte(outageWorkload("after"))) }).WithTimeout(timeUnit).Should(Succeed())
		changed := time.Now()
		// Which part of the way is whose: the hub's controllers render the
		// Work, the agent applies it.
		var rendered time.Time
		eventually(ctx, func(g Gomega) {
			if rendered.IsZero() && workCarries(ctx, member.Name, "steady", "after") {
				rendered = time.Now()
			}
			g.Expect(envValue(ctx, edge, "pull-outage", "steady")()).To(Equal("after"))
		}).WithTimeout(3 * timeUnit).Should(Succeed())
		reached := time.Now()
		if rendered.IsZero() {
			rendered = reached
		}
		eventually(ctx, envValue(ctx, m1, "pull-outage", "steady")).WithTimeout(3*timeUnit).Should(Equal("after"), "member1")
		AddReportEntry("hub outage: a change made after the restart",
			fmt.Sprintf("written %s after the hub apiserver was ready; its Work rendered %s later (hub controllers reconnecting); applied in the Pull member %s after that",
				changed.Sub(back).Round(time.Second), rendered.Sub(changed).Round(time.Second), reached.Sub(rendered).Round(time.Second)))

		By("the agent reconnected without restarting, renewing its Lease again")
		Expect(theFleet.Processes()[agentProcess]).To(Equal(agentPid))
		eventually(ctx, func(g Gomega) {
			lease := &coordinationv1.Lease{}
			g.Expect(theFleet.Hub.Client.Get(ctx, agentLeaseKey(member.Name), lease)).To(Succeed())
			g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", back))
		}).WithTimeout(timeUnit).Should(Succeed())

		By("objects that did not change were not applied again beyond drift repair (one apply a minute)")
		unchanged := auditEvents(edge.AuditLog(), func(r auditEvent) bool {
			return r.User.Username == agentIdentity && r.Verb == "patch" && r.ObjectRef != nil &&
				r.ObjectRef.Namespace == "pull-outage" && r.ObjectRef.Name == "steady-config" &&
				r.received().After(stopped) && r.received().Before(reached)
		})
		window := reached.Sub(stopped)
		AddReportEntry("hub outage: applies of an unchanged object by the agent", fmt.Sprintf("%d in %s (outage and catch-up)", len(unchanged), window.Round(time.Second)))
		Expect(len(unchanged)).To(BeNumerically("<=", int(window/time.Minute)+1))

		By("waiting for the hub's own controllers to recover: same processes, Clusters Available, members Ready")
		for name, pid := range hubPids {
			Expect(theFleet.Processes()).To(HaveKeyWithValue(name, pid), "%s must survive the outage", name)
		}
		Expect(theFleet.WaitClustersAvailable(ctx, 3*timeUnit)).To(Succeed())
		for _, m := range theFleet.Members() {
			readyMember(ctx, m)
		}

		By("removing the workload")
		deletePullLab(ctx, "pull-outage")
		eventually(ctx, func(g Gomega) {
			for _, m := range []*fleet.Member{m1, edge} {
				g.Expect(memberDeployment(ctx, m, "pull-outage", "steady")).To(BeNil(), m.Name())
			}
		}).WithTimeout(2 * timeUnit).Should(Succeed())
	}, SpecTimeout(12*timeUnit))

	It("measures the agent's resident memory and CPU, idle and while applying 100 Works", Label(slowLabel), func(ctx SpecContext) {
		pid := theFleet.Processes()[agentProcess]
		Expect(pid).NotTo(BeZero())
		idle := sampleProcess(ctx, pid, 30*time.Second, nil)

		federatedNamespace(ctx, "pull-bench")
		var manifests strings.Builder
		for i := range 100 {
			fmt.Fprintf(&manifests, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: bench-%03d, namespace: pull-bench, labels: {bench: pull}}\ndata: {index: \"%d\"}\n", i, i)
		}
		manifests.WriteString(`---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: bench, namespace: pull-bench}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {bench: pull}}}]
  placement: {clusterAffinity: {clusterNames: [edge]}}
`)
		Expect(theFleet.Apply(ctx, []byte(manifests.String()))).To(Succeed())
		applied := func() bool {
			works := &workv1alpha1.WorkList{}
			if err := theFleet.Hub.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(member.Name))); err != nil {
				return false
			}
			n := 0
			for i := range works.Items {
				w := &works.Items[i]
				if strings.HasPrefix(w.Name, "pull-bench.bench-") && conditions.IsTrue(w, workv1alpha1.WorkApplied) {
					n++
				}
			}
			return n == 100
		}
		busy := sampleProcess(ctx, pid, 5*timeUnit, applied)
		Expect(busy.done).To(BeTrue(), "100 Works Applied within 5 minutes")
		cms := &metav1.PartialObjectMetadataList{}
		cms.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		Expect(edge.Client.List(ctx, cms, client.InNamespace("pull-bench"), client.MatchingLabels{"bench": "pull"})).To(Succeed())
		Expect(cms.Items).To(HaveLen(100), "ConfigMaps of the 100 Works in the member")
		after := sampleProcess(ctx, pid, 30*time.Second, nil)

		report := fmt.Sprintf("idle 30s:            RSS %d MiB (peak %d MiB), CPU %.2f s (%.1f%% of a core)\n"+
			"applying 100 Works:  %s until all Applied; RSS peak %d MiB, CPU %.2f s (%.1f%% of a core)\n"+
			"idle after, 30s:     RSS %d MiB (peak %d MiB), CPU %.2f s (%.1f%% of a core)\n",
			idle.lastRSS>>20, idle.peakRSS>>20, idle.cpu.Seconds(), idle.cores()*100,
			busy.elapsed.Round(time.Second), busy.peakRSS>>20, busy.cpu.Seconds(), busy.cores()*100,
			after.lastRSS>>20, after.peakRSS>>20, after.cpu.Seconds(), after.cores()*100)
		AddReportEntry("flotilla-agent resources (/proc/<pid>/status VmRSS, /proc/<pid>/stat utime+stime)", report)
		GinkgoWriter.Print(report)

		// 100 Works removed at once from one member are paced: at most a
		// quarter of what the member holds (at least 10) per minute, so
		// 25, 18, 14, 10, … — eight windows.
		deletePullLab(ctx, "pull-bench")
		eventually(ctx, func() int {
			list := &corev1.ConfigMapList{}
			if err := edge.Client.List(ctx, list, client.InNamespace("pull-bench"), client.MatchingLabels{"bench": "pull"}); err != nil {
				return -1
			}
			return len(list.Items)
		}).WithTimeout(10*timeUnit).Should(BeZero(), "the 100 ConfigMaps removed from the member, paced")
	}, SpecTimeout(20*timeUnit))
})

// pullLab is the fleet-web lab divided 2:1 between member1 and the Pull-mode
// member edge, edge's copy overridden.
func pullLab(namespace, tier string) string {
	return strings.NewReplacer("NS", namespace, "TIER_VALUE", tier).Replace(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: fleet-web, namespace: NS}
spec:
  replicas: 6
  selector: {matchLabels: {app: fleet-web}}
  template:
    metadata: {labels: {app: fleet-web}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        env: [{name: TIER, value: TIER_VALUE}]
        resources: {requests: {cpu: 100m}}
---
apiVersion: v1
kind: Service
metadata: {name: fleet-web, namespace: NS}
spec:
  selector: {app: fleet-web}
  ports: [{port: 80}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: fleet-web, namespace: NS}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: fleet-web}
  - {apiVersion: v1, kind: Service, name: fleet-web}
  placement:
    clusterAffinity: {clusterNames: [member1, edge]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 2}
        - {targetCluster: {clusterNames: [edge]}, weight: 1}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: fleet-web, namespace: NS}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: fleet-web}]
  overrideRules:
  - targetCluster: {clusterNames: [edge]}
    overriders:
      plaintext:
      - {path: /spec/template/spec/containers/0/env/0/value, operator: replace, value: secondary}
`)
}

// outageWorkload is a Deployment and a ConfigMap duplicated to member1 and
// edge; only the Deployment's TIER changes between its versions.
func outageWorkload(tier string) string {
	return strings.ReplaceAll(`
apiVersion: v1
kind: ConfigMap
metadata: {name: steady-config, namespace: pull-outage}
data: {unchanged: "true"}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: steady, namespace: pull-outage}
spec:
  replicas: 2
  selector: {matchLabels: {app: steady}}
  template:
    metadata: {labels: {app: steady}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        env: [{name: TIER, value: TIER_VALUE}]
        resources: {requests: {cpu: 100m}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: steady, namespace: pull-outage}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: steady}
  - {apiVersion: v1, kind: ConfigMap, name: steady-config}
  placement:
    clusterAffinity: {clusterNames: [member1, edge]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
`, "TIER_VALUE", tier)
}

// deletePullLab deletes a namespace's templates and policies on the hub.
func deletePullLab(ctx context.Context, namespace string) {
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ConfigMapList{}} {
		Expect(theFleet.Hub.Client.DeleteAllOf(ctx, objectOf(list), client.InNamespace(namespace))).To(Succeed())
	}
	for _, policy := range []client.Object{&policyv1alpha1.PropagationPolicy{}, &policyv1alpha1.OverridePolicy{}} {
		Expect(theFleet.Hub.Client.DeleteAllOf(ctx, policy, client.InNamespace(namespace))).To(Succeed())
	}
}

func objectOf(list client.ObjectList) client.Object {
	switch list.(type) {
	case *appsv1.DeploymentList:
		return &appsv1.Deployment{}
	case *corev1.ServiceList:
		return &corev1.Service{}
	default:
		return &corev1.ConfigMap{}
	}
}

// workCarries reports whether a Work of the member carries the template
// name with the TIER value.
func workCarries(ctx context.Context, member, name, tier string) bool {
	works := &workv1alpha1.WorkList{}
	if err := theFleet.Hub.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(member))); err != nil {
		return false
	}
	for _, w := range works.Items {
		for _, m := range w.Spec.Workload.Manifests {
			raw := string(m.Raw)
			if strings.Contains(raw, `"name":"`+name+`"`) && strings.Contains(raw, `"value":"`+tier+`"`) {
				return true
			}
		}
	}
	return false
}

func agentLeaseKey(member string) client.ObjectKey {
	return client.ObjectKey{Namespace: clusterv1alpha1.AgentLeaseNamespace(member), Name: clusterv1alpha1.AgentLeaseName}
}

// agentHubClient is a hub client with the credentials the member holds for
// its agent: the Secret the ClusterResourceSet delivered, read in the member.
func agentHubClient(ctx context.Context, m *fleet.Member) client.Client {
	secret := &corev1.Secret{}
	Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: agentmanifests.HubSecret}, secret)).To(Succeed())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[agentmanifests.KubeconfigKey])
	Expect(err).NotTo(HaveOccurred())
	c, err := client.New(cfg, client.Options{Scheme: fleet.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

// agentMemberClient is a member client authenticated as the agent's
// ServiceAccount (a token from the TokenRequest API, as the agent's process gets).
func agentMemberClient(ctx context.Context, m *fleet.Member) client.Client {
	sa := &corev1.ServiceAccount{}
	Expect(m.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.SystemNamespace, Name: agentmanifests.ServiceAccount}, sa)).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
	Expect(m.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	cfg := rest.AnonymousClientConfig(m.RESTConfig())
	cfg.BearerToken = tr.Status.Token
	c, err := client.New(cfg, client.Options{Scheme: fleet.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

func managers(obj metav1.Object) []string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return out
}

// processSample is what sampleProcess measured.
type processSample struct {
	elapsed          time.Duration
	cpu              time.Duration
	lastRSS, peakRSS int64
	// done: until returned true before the duration ran out.
	done bool
}

func (s processSample) cores() float64 { return s.cpu.Seconds() / s.elapsed.Seconds() }

// sampleProcess samples a process's resident memory every second and its
// CPU time (utime + stime) at both ends, for d or until until returns true.
func sampleProcess(ctx context.Context, pid int, d time.Duration, until func() bool) processSample {
	began, cpu0 := time.Now(), cpuTime(pid)
	var s processSample
	for time.Since(began) < d {
		rss := residentBytes(pid)
		s.lastRSS, s.peakRSS = rss, max(s.peakRSS, rss)
		if until != nil && until() {
			s.done = true
			break
		}
		select {
		case <-ctx.Done():
			Fail("interrupted while sampling")
		case <-time.After(time.Second):
		}
	}
	s.elapsed, s.cpu = time.Since(began), cpuTime(pid)-cpu0
	return s
}

// residentBytes is a process's resident memory now.
func residentBytes(pid int) int64 {
	rss, err := fleet.ProcessResidentBytes(pid)
	Expect(err).NotTo(HaveOccurred())
	return rss
}

// cpuTime is the CPU time a process has used so far.
func cpuTime(pid int) time.Duration {
	t, err := fleet.ProcessCPUTime(pid)
	Expect(err).NotTo(HaveOccurred())
	return t
}
