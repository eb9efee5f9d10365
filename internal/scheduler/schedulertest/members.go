// Package schedulertest builds MemberClusters for the scheduler's tests and
// benchmarks: a Ready member serving apps/v1 Deployment, changed by options.
package schedulertest

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ModelTime is the observed time of capacity models built here.
var ModelTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Option changes a member.
type Option func(*clusterv1alpha1.MemberCluster)

// Member is a Ready member serving apps/v1 Deployment, without a capacity model.
func Member(name string, opts ...Option) clusterv1alpha1.MemberCluster {
	m := clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: clusterv1alpha1.MemberClusterStatus{
			Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Healthy"}},
			APIEnablements: []clusterv1alpha1.APIEnablement{
				{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
				{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}}},
			},
		},
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

// Labels sets labels from key, value pairs.
func Labels(kv ...string) Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m.Labels[kv[i]] = kv[i+1]
		}
	}
}

// Region sets spec.region.
func Region(r string) Option { return func(m *clusterv1alpha1.MemberCluster) { m.Spec.Region = r } }

// Zone sets spec.zone.
func Zone(z string) Option { return func(m *clusterv1alpha1.MemberCluster) { m.Spec.Zone = z } }

// Provider sets spec.provider.
func Provider(p string) Option { return func(m *clusterv1alpha1.MemberCluster) { m.Spec.Provider = p } }

// Taint adds a taint.
func Taint(key, value string, effect corev1.TaintEffect) Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		m.Spec.Taints = append(m.Spec.Taints, corev1.Taint{Key: key, Value: value, Effect: effect})
	}
}

// Cordoned sets spec.unschedulable.
func Cordoned() Option { return func(m *clusterv1alpha1.MemberCluster) { m.Spec.Unschedulable = true } }

// Deleting sets a deletion timestamp.
func Deleting() Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		t := metav1.NewTime(ModelTime)
		m.DeletionTimestamp = &t
	}
}

// NotReady makes the Ready condition False with reason.
func NotReady(reason string) Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		m.Status.Conditions = []metav1.Condition{{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason}}
	}
}

// NoAPIs removes the API enablements, as for a member that never reported them.
func NoAPIs() Option { return func(m *clusterv1alpha1.MemberCluster) { m.Status.APIEnablements = nil } }

// Nodes adds a node group of count Nodes with free resources given as name,
// quantity pairs; "pods" is 110 unless given.
func Nodes(count int32, free ...string) Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		list := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
		for i := 0; i+1 < len(free); i += 2 {
			list[corev1.ResourceName(free[i])] = resource.MustParse(free[i+1])
		}
		if m.Status.CapacityModel == nil {
			m.Status.CapacityModel = &clusterv1alpha1.CapacityModel{ObservedTime: metav1.NewTime(ModelTime)}
		}
		m.Status.CapacityModel.NodeGroups = append(m.Status.CapacityModel.NodeGroups, clusterv1alpha1.NodeGroup{Count: count, Free: list})
	}
}

// ObservedAt sets the capacity model's observed time.
func ObservedAt(t time.Time) Option {
	return func(m *clusterv1alpha1.MemberCluster) {
		if m.Status.CapacityModel != nil {
			m.Status.CapacityModel.ObservedTime = metav1.NewTime(t)
		}
	}
}

// Snapshot builds a snapshot or fails the test.
func Snapshot(tb testing.TB, members ...clusterv1alpha1.MemberCluster) *framework.Snapshot {
	tb.Helper()
	s, err := framework.NewSnapshot(members)
	if err != nil {
		tb.Fatalf("NewSnapshot: %v", err)
	}
	return s
}

// BenchFleet is the benchmark fleet, fixed so results compare across
// versions: members m0000… with label and field region r{i%4}, one node
// group of one Node with 64 CPU less (i%32) CPU already allocated, 256Gi
// memory and 1100 pods free, serving apps/v1 Deployment, Ready.
func BenchFleet(n int) []clusterv1alpha1.MemberCluster {
	fleet := make([]clusterv1alpha1.MemberCluster, n)
	for i := range fleet {
		region := fmt.Sprintf("r%d", i%4)
		fleet[i] = Member(fmt.Sprintf("m%04d", i),
			Labels("region", region), Region(region),
			Nodes(1, "cpu", fmt.Sprint(64-i%32), "memory", "256Gi", "pods", "1100"))
	}
	return fleet
}
