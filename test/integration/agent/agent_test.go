package agent_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/addon/agent"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func TestAgentAppliesItsWorksReportsTheirStateAndRemovesWhatLeaves(t *testing.T) {
	w := createWork(t, edge, "shop", manifest(t, configMap("shop", "settings", "v1")), manifest(t, deployment("shop", "web", 2)))

	eventually(t, "the Work applied by the agent", func() error {
		if err := conditionIs(w, workv1alpha1.WorkApplied, metav1.ConditionTrue, workv1alpha1.WorkReasonApplied); err != nil {
			return err
		}
		if n := len(w.Status.ManifestStatuses); n != 2 || !w.Status.ManifestStatuses[0].Applied || !w.Status.ManifestStatuses[1].Applied {
			return fmt.Errorf("manifest statuses %+v, want 2 applied", w.Status.ManifestStatuses)
		}
		return nil
	})
	// Its status is written in one request, a server-side apply as the
	// agent's own field manager (applier.WriteOutcome), never the
	// conditions in one write and the manifests' statuses in another.
	for _, f := range w.ManagedFields {
		if f.Subresource == "status" && (f.Manager != agent.FieldManager || f.Operation != metav1.ManagedFieldsOperationApply) {
			t.Errorf("Work status written by %s/%s; want only %s/Apply", f.Manager, f.Operation, agent.FieldManager)
		}
	}
	if !slices.Contains(w.Finalizers, workv1alpha1.ExecutionFinalizer) {
		t.Errorf("Work finalizers %v, want %s: the agent removes what it applied before the Work goes", w.Finalizers, workv1alpha1.ExecutionFinalizer)
	}
	// No kube-controller-manager runs in the member: the Deployment is not ready.
	if d := w.Status.ManifestStatuses[1]; d.Health != workv1alpha1.ResourceUnhealthy {
		t.Errorf("Deployment health %s (%s), want Unhealthy until its replicas are ready", d.Health, d.Message)
	}
	cm := &corev1.ConfigMap{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "shop", Name: "settings"}, cm); err != nil {
		t.Fatal(err)
	}
	if cm.Labels[workv1alpha1.ManagedByLabel] != workv1alpha1.ManagedByValue || fieldManagers(cm) != "flotilla/Apply" {
		t.Errorf("member ConfigMap labels %v, managers %s; want Flotilla's label and only the flotilla field manager", cm.Labels, fieldManagers(cm))
	}
	if requests.of("agent", configMapPath("shop", "settings")) == 0 || requests.of("hub", configMapPath("shop", "settings")) != 0 {
		t.Errorf("applies of the ConfigMap: agent %d, hub %d; want the agent's only", requests.of("agent", configMapPath("shop", "settings")), requests.of("hub", configMapPath("shop", "settings")))
	}

	// The member's controllers bring the Deployment up: the Work says so.
	d := &appsv1.Deployment{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "shop", Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	if err := memberAdmin.Status().Update(ctx(), d); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Work Available with the Deployment's status", func() error {
		if err := conditionIs(w, workv1alpha1.WorkAvailable, metav1.ConditionTrue, workv1alpha1.WorkReasonAvailable); err != nil {
			return err
		}
		var st struct {
			ReadyReplicas int `json:"readyReplicas"`
		}
		if raw := w.Status.ManifestStatuses[1].Status; raw == nil || json.Unmarshal(raw.Raw, &st) != nil || st.ReadyReplicas != 2 {
			return fmt.Errorf("Deployment status in the Work %v, want readyReplicas 2", raw)
		}
		return nil
	})

	// The ConfigMap leaves the Work: it leaves the member.
	updateWork(t, w, manifest(t, deployment("shop", "web", 2)))
	eventually(t, "the dropped ConfigMap removed from the member", goneFromMember(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "settings"}}))

	// The Work goes: so does its Deployment, and then the Work itself.
	if err := hub.Client.Delete(ctx(), w); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted Work's Deployment removed from the member", goneFromMember(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}))
	eventually(t, "the Work released by the agent", func() error {
		err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(w), &workv1alpha1.Work{})
		if client.IgnoreNotFound(err) != nil {
			return err
		}
		if err == nil {
			return fmt.Errorf("Work still on the hub")
		}
		return nil
	})
}

func TestAgentRenewsItsLeaseOnTheHub(t *testing.T) {
	key := client.ObjectKey{Namespace: clusterv1alpha1.AgentLeaseNamespace(edge), Name: clusterv1alpha1.AgentLeaseName}
	l := &coordinationv1.Lease{}
	eventually(t, "the agent's Lease", func() error { return hub.Client.Get(ctx(), key, l) })
	if ptr.Deref(l.Spec.HolderIdentity, "") != "flotilla-agent-test" || ptr.Deref(l.Spec.LeaseDurationSeconds, 0) != clusterv1alpha1.AgentLeaseDurationSeconds {
		t.Errorf("Lease holder %v, duration %v; want flotilla-agent-test and %ds", l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, clusterv1alpha1.AgentLeaseDurationSeconds)
	}
	first := l.Spec.RenewTime.Time
	eventually(t, "the Lease renewed again", func() error {
		if err := hub.Client.Get(ctx(), key, l); err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(first) {
			return fmt.Errorf("renewTime %s not after %s", l.Spec.RenewTime, first)
		}
		return nil
	})
}

func TestAgentReportsItsMemberIntoTheMemberClusterStatus(t *testing.T) {
	version, err := kubernetes.NewForConfigOrDie(memberConfig).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	m := &clusterv1alpha1.MemberCluster{}
	eventually(t, "version, API enablements and the capacity model in the member's status", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: edge}, m); err != nil {
			return err
		}
		st := m.Status
		switch {
		case st.KubernetesVersion != version.GitVersion:
			return fmt.Errorf("kubernetesVersion %q, want %q", st.KubernetesVersion, version.GitVersion)
		case !slices.ContainsFunc(st.APIEnablements, func(e clusterv1alpha1.APIEnablement) bool {
			return e.GroupVersion == "apps/v1" && slices.Contains(e.Resources, clusterv1alpha1.APIResource{Name: "deployments", Kind: "Deployment"})
		}):
			return fmt.Errorf("apiEnablements lack apps/v1 deployments")
		case st.CapacityModel == nil || len(st.CapacityModel.NodeGroups) != 1 || st.CapacityModel.NodeGroups[0].Count != 1:
			return fmt.Errorf("capacity model %+v, want the one node edge-node-1", st.CapacityModel)
		case st.NodeSummary == nil || st.NodeSummary.ReadyNum != 1 || st.LastHeartbeatTime == nil:
			return fmt.Errorf("node summary %+v, heartbeat %v", st.NodeSummary, st.LastHeartbeatTime)
		}
		return nil
	})
	if m.Status.IdentitySecretRef != nil {
		t.Errorf("identitySecretRef %+v: the hub has no identity in a Pull-mode member", m.Status.IdentitySecretRef)
	}

	// The capacity model follows the member: a Pod bound to the node is counted.
	pods := m.Status.CapacityModel.ObservedPods
	if err := memberAdmin.Create(ctx(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "busy"},
		Spec: corev1.PodSpec{NodeName: "edge-node-1", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("1")}}}}},
	}
	if err := memberAdmin.Create(ctx(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = memberAdmin.Delete(ctx(), pod, client.GracePeriodSeconds(0)) })
	eventually(t, "the new Pod in the reported capacity model", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: edge}, m); err != nil {
			return err
		}
		if got := m.Status.CapacityModel.ObservedPods; got != pods+1 {
			return fmt.Errorf("observedPods %d, want %d", got, pods+1)
		}
		return nil
	})

	// Enrolment, which syncs the member every second here, leaves these to the agent.
	reported := m.Status.DeepCopy()
	consistently(t, 3*syncPeriod, "the agent's report kept", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: edge}, m); err != nil {
			return err
		}
		if m.Status.KubernetesVersion != reported.KubernetesVersion || m.Status.CapacityModel == nil || m.Status.CapacityModel.ObservedPods != reported.CapacityModel.ObservedPods {
			return fmt.Errorf("status changed to version %q, model %+v", m.Status.KubernetesVersion, m.Status.CapacityModel)
		}
		return nil
	})
}

// TestAnObjectDeletedInThePullMemberIsPutBackByTheWatch: the agent
// re-applies a healthy Work only every 5 minutes in this suite; an object
// someone deletes in the member is put back at once because the agent
// watches what it applied.
func TestAnObjectDeletedInThePullMemberIsPutBackByTheWatch(t *testing.T) {
	w := createWork(t, edge, "drift", manifest(t, configMap("drift", "settings", "v1")))
	eventually(t, "the Work applied and Available", func() error {
		return conditionIs(w, workv1alpha1.WorkAvailable, metav1.ConditionTrue, workv1alpha1.WorkReasonAvailable)
	})
	cm := &corev1.ConfigMap{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "drift", Name: "settings"}, cm); err != nil {
		t.Fatal(err)
	}
	uid := cm.UID
	start := time.Now()
	if err := memberAdmin.Delete(ctx(), cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap put back in the member", func() error {
		again := &corev1.ConfigMap{}
		if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: "drift", Name: "settings"}, again); err != nil {
			return err
		}
		if again.UID == uid {
			return fmt.Errorf("still the deleted one")
		}
		return nil
	})
	t.Logf("MEASURE ConfigMap deleted in the Pull member → put back by the agent: %s (re-apply of a healthy Work every %s)",
		time.Since(start).Round(time.Millisecond), agentResync.ResyncHealthy)
}
