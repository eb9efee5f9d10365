package enrolment_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/addon/estimator"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	model "github.com/flotilla-io/flotilla/internal/estimator"
)

// createNode creates a Ready Node in the member with the given capacity.
func createNode(t *testing.T, name, pool, cpu, memory string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, "pool": pool}}}
	if err := memberAdmin.Create(ctx(), n); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = memberAdmin.Delete(context.Background(), n) })
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(memory), corev1.ResourcePods: resource.MustParse("110")}
	n.Status = corev1.NodeStatus{Capacity: alloc, Allocatable: alloc, Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}}}
	if err := memberAdmin.Status().Update(ctx(), n); err != nil {
		t.Fatal(err)
	}
}

func TestEstimatorCapacityModelReachesMemberStatus(t *testing.T) {
	createNode(t, "small-1", "small", "4", "8Gi")
	createNode(t, "small-2", "small", "4", "8Gi")
	createNode(t, "big-1", "big", "16", "64Gi")
	// A Pod bound to small-2 leaves it 1 CPU less than its twin.
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "default"}}
	if err := memberAdmin.Create(ctx(), sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "busy"},
		Spec: corev1.PodSpec{NodeName: "small-2", Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}},
	}
	if err := memberAdmin.Create(ctx(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = memberAdmin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })

	// flotilla-estimator, in-process, as the add-on runs it in the member.
	estCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	go func() {
		_ = estimator.Run(estCtx, kubernetes.NewForConfigOrDie(memberConfig), estimator.Config{
			Namespace: clusterv1alpha1.SystemNamespace, ConfigMap: clusterv1alpha1.CapacityModelConfigMap,
			PublishInterval: 200 * time.Millisecond, Model: model.DefaultOptions(),
		})
	}()
	t.Cleanup(func() {
		_ = memberAdmin.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-system", Name: "flotilla-capacity-model"}})
	})

	createCluster(t, "enrol-capacity", "measured", clusterOpts{labels: enrolled})
	waitEnrolled(t, "measured")
	eventually(t, "the capacity model in the member's status", func() error {
		m := &clusterv1alpha1.MemberCluster{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Name: "measured"}, m); err != nil {
			return err
		}
		cm := m.Status.CapacityModel
		if cm == nil || len(cm.NodeGroups) != 3 || cm.ObservedPods != 1 {
			return fmt.Errorf("capacity model %+v, want 3 groups (big, small, small with 1 CPU used) and 1 pod", cm)
		}
		free := map[string]string{}
		for _, g := range cm.NodeGroups {
			free[g.Labels["pool"]+"/"+g.Free.Cpu().String()] = fmt.Sprint(g.Count)
		}
		if want := map[string]string{"big/16": "1", "small/4": "1", "small/3": "1"}; fmt.Sprint(free) != fmt.Sprint(want) {
			return fmt.Errorf("groups by pool/free CPU → count %v, want %v", free, want)
		}
		if ns := m.Status.NodeSummary; ns == nil || ns.TotalNum != 3 || ns.ReadyNum != 3 {
			return fmt.Errorf("nodeSummary %+v, want 3 total, 3 ready", ns)
		}
		if rs := m.Status.ResourceSummary; rs == nil || rs.Allocatable.Cpu().String() != "24" || rs.Allocated.Cpu().String() != "1" {
			return fmt.Errorf("resourceSummary %+v, want 24 CPU allocatable, 1 allocated", rs)
		}
		return nil
	})
}
