package estimator

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/estimator"
)

func node(name string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
}

func pod(name, nodeName, cpu string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{
			Name: "c", Env: []corev1.EnvVar{{Name: "BIG", Value: "dropped by the informer transform"}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}},
		}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// published reads the model the estimator wrote, or nil.
func published(t *testing.T, cs *fake.Clientset) *clusterv1alpha1.CapacityModel {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(clusterv1alpha1.SystemNamespace).Get(context.Background(), clusterv1alpha1.CapacityModelConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	m := &clusterv1alpha1.CapacityModel{}
	if err := json.Unmarshal([]byte(cm.Data[clusterv1alpha1.CapacityModelKey]), m); err != nil {
		t.Fatalf("decode published model: %v", err)
	}
	return m
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRunPublishesTheModelAndFollowsPods(t *testing.T) {
	cs := fake.NewClientset(node("a"), node("b"), pod("p1", "a", "1"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, cs, Config{Namespace: clusterv1alpha1.SystemNamespace, ConfigMap: clusterv1alpha1.CapacityModelConfigMap,
			PublishInterval: 50 * time.Millisecond, Model: estimator.DefaultOptions()})
	}()

	waitFor(t, "the first model", func() bool { return published(t, cs) != nil })
	m := published(t, cs)
	if len(m.NodeGroups) != 2 || m.ObservedPods != 1 {
		t.Fatalf("published %d groups and %d pods, want 2 groups (node a has 1 CPU less) and 1 pod", len(m.NodeGroups), m.ObservedPods)
	}

	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("p2", "b", "1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a model with both nodes at 3 CPU free", func() bool {
		m := published(t, cs)
		return len(m.NodeGroups) == 1 && m.NodeGroups[0].Count == 2 && m.NodeGroups[0].Free.Cpu().String() == "3"
	})

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v", err)
	}
}

func TestRunPublishesAtMostOncePerInterval(t *testing.T) {
	cs := fake.NewClientset(node("a"))
	var writes atomic.Int32
	cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "create" || a.GetVerb() == "update" {
			writes.Add(1)
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const interval = 200 * time.Millisecond
	go func() {
		_ = Run(ctx, cs, Config{Namespace: clusterv1alpha1.SystemNamespace, ConfigMap: clusterv1alpha1.CapacityModelConfigMap,
			PublishInterval: interval, Model: estimator.DefaultOptions()})
	}()
	waitFor(t, "the first model", func() bool { return writes.Load() == 1 })

	start := time.Now()
	for i := range 40 {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, pod(fmt.Sprintf("p%d", i), "a", "10m"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the model with 40 pods", func() bool { return published(t, cs).ObservedPods == 40 })
	elapsed := time.Since(start)

	// 40 changes, but at most one write per interval (plus the one in flight).
	if max := int32(elapsed/interval) + 2; writes.Load()-1 > max {
		t.Errorf("%d writes in %s for 40 changes, want at most %d with a %s interval", writes.Load()-1, elapsed, max, interval)
	}
}
