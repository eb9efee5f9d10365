package scheduler_test

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

func TestInputFromBinding(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	spec := workv1alpha1.ResourceBindingSpec{
		Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
		Replicas: 3,
		Clusters: current("a", 3),
		GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{
			{FromCluster: "b", Reason: "TaintUntolerated", Producer: "taint-manager"},
		},
	}
	tests := []struct {
		name          string
		triggered     *metav1.Time
		lastScheduled *metav1.Time
		wantRebalance bool
	}{
		{"no trigger", nil, &t0, false},
		{"trigger after the last decision", &t1, &t0, true},
		{"trigger before the last decision", &t0, &t1, false},
		{"trigger on a binding never scheduled", &t0, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec
			s.RescheduleTriggeredAt = tt.triggered
			in := scheduler.InputFromBinding("shop/web", &s, &workv1alpha1.ResourceBindingStatus{LastScheduledTime: tt.lastScheduled, SchedulerObservedAffinityName: "primary"})
			if in.Rebalance != tt.wantRebalance {
				t.Errorf("rebalance = %v, want %v", in.Rebalance, tt.wantRebalance)
			}
			if in.Key != "shop/web" || in.Namespace != "shop" || in.Kind != "Deployment" || in.Replicas != 3 ||
				!slices.Equal(in.EvictedFrom, []string{"b"}) || in.ObservedAffinityName != "primary" || len(in.Current) != 1 {
				t.Errorf("input = %+v", in)
			}
		})
	}
}

func TestFailbackTriggeredAt(t *testing.T) {
	at, ok := scheduler.FailbackTriggeredAt(map[string]string{workv1alpha1.FailbackTriggeredAtAnnotation: "2026-12-03T10:00:01Z"})
	if !ok || !at.Equal(time.Date(2026, 12, 3, 10, 0, 1, 0, time.UTC)) {
		t.Errorf("FailbackTriggeredAt = %v, %v", at, ok)
	}
	for _, a := range []map[string]string{nil, {workv1alpha1.FailbackTriggeredAtAnnotation: "soon"}} {
		if _, ok := scheduler.FailbackTriggeredAt(a); ok {
			t.Errorf("FailbackTriggeredAt(%v) asks for a rebalance", a)
		}
	}
}
