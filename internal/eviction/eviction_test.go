package eviction

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func noExecute(key string, added time.Time) corev1.Taint {
	t := corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute}
	if !added.IsZero() {
		t.TimeAdded = ptr.To(metav1.NewTime(added))
	}
	return t
}

func tolerate(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func TestDueOfHonoursTolerationSecondsFromTimeAdded(t *testing.T) {
	const k = "cluster.flotilla.io/unreachable"
	tests := []struct {
		name        string
		tolerations []corev1.Toleration
		taints      []corev1.Taint
		evicts      bool
		at          time.Time
		tolerated   bool
	}{
		{"no taint: stays", nil, nil, false, time.Time{}, false},
		{"NoSchedule never evicts", nil, []corev1.Taint{{Key: k, Effect: corev1.TaintEffectNoSchedule}}, false, time.Time{}, false},
		{"untolerated NoExecute: at once", nil, []corev1.Taint{noExecute(k, t0)}, true, time.Time{}, false},
		{"tolerated for good", []corev1.Toleration{tolerate(k, nil)}, []corev1.Taint{noExecute(k, t0)}, false, time.Time{}, false},
		{"tolerated 5s: due 5s after timeAdded", []corev1.Toleration{tolerate(k, ptr.To[int64](5))}, []corev1.Taint{noExecute(k, t0)}, true, t0.Add(5 * time.Second), true},
		{"the smallest of two matching tolerations wins", []corev1.Toleration{tolerate(k, ptr.To[int64](60)), tolerate("", ptr.To[int64](5))},
			[]corev1.Taint{noExecute(k, t0)}, true, t0.Add(5 * time.Second), true},
		{"tolerationSeconds 0: at once", []corev1.Toleration{tolerate(k, ptr.To[int64](0))}, []corev1.Taint{noExecute(k, t0)}, true, time.Time{}, true},
		{"a toleration for another key does not help", []corev1.Toleration{tolerate("other", nil)}, []corev1.Taint{noExecute(k, t0)}, true, time.Time{}, false},
		{"a NoSchedule toleration does not tolerate NoExecute",
			[]corev1.Toleration{{Key: k, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			[]corev1.Taint{noExecute(k, t0)}, true, time.Time{}, false},
		{"of two taints the earlier due decides", []corev1.Toleration{tolerate(k, ptr.To[int64](60)), tolerate("b", ptr.To[int64](10))},
			[]corev1.Taint{noExecute(k, t0), noExecute("b", t0.Add(20*time.Second))}, true, t0.Add(30 * time.Second), true},
		{"a taint tolerated for good does not hide another", []corev1.Toleration{tolerate(k, nil)},
			[]corev1.Taint{noExecute(k, t0), noExecute("b", t0)}, true, time.Time{}, false},
		{"no timeAdded: the toleration has run out", []corev1.Toleration{tolerate(k, ptr.To[int64](60))}, []corev1.Taint{noExecute(k, time.Time{})}, true, time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, evicts := DueOf(tt.tolerations, tt.taints)
			if evicts != tt.evicts || !due.At.Equal(tt.at) || due.Tolerated != tt.tolerated {
				t.Errorf("DueOf = %+v, %v; want at %v tolerated %v, %v", due, evicts, tt.at, tt.tolerated, tt.evicts)
			}
		})
	}
}

func placed(pairs ...any) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, workv1alpha1.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
	}
	return out
}

func TestEvictRecordsATaskAndLeavesThePlacementToTheScheduler(t *testing.T) {
	due := Due{Taint: noExecute("cluster.flotilla.io/unreachable", t0)}
	tests := []struct {
		name     string
		failover *policyv1alpha1.FailoverBehavior
		mode     policyv1alpha1.PurgeMode
		suppress *bool
	}{
		{"default: Gracefully", nil, policyv1alpha1.PurgeModeGracefully, nil},
		{"Directly", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.PurgeModeDirectly}}, policyv1alpha1.PurgeModeDirectly, nil},
		{"Never suppresses deletion", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{PurgeMode: policyv1alpha1.Never}}, policyv1alpha1.Never, ptr.To(true)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 4, "m2", 2), Failover: tt.failover}
			if !Evict(spec, "m2", TaintCause(spec, due, 10*time.Minute), t0) {
				t.Fatal("Evict = false")
			}
			// spec.clusters is the scheduler's: the member leaves it there.
			if !equality.Semantic.DeepEqual(spec.Clusters, placed("m1", 4, "m2", 2)) {
				t.Errorf("clusters = %v, want them untouched, m1:4 m2:2", spec.Clusters)
			}
			if len(spec.GracefulEvictionTasks) != 1 {
				t.Fatalf("tasks = %v", spec.GracefulEvictionTasks)
			}
			task := spec.GracefulEvictionTasks[0]
			if task.FromCluster != "m2" || task.PurgeMode != tt.mode || *task.Replicas != 2 || task.Reason != "TaintUntolerated" ||
				task.Producer != workv1alpha1.EvictionProducerTaintManager || *task.GracePeriodSeconds != 600 || !task.CreationTimestamp.Time.Equal(t0) ||
				!slices.Equal(task.ClustersBeforeFailover, []string{"m1", "m2"}) || !ptr.Equal(task.SuppressDeletion, tt.suppress) ||
				task.Message != "taint cluster.flotilla.io/unreachable:NoExecute is not tolerated" {
				t.Errorf("task = %+v", task)
			}
		})
	}
	spec := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 4)}
	if Evict(spec, "m2", TaintCause(spec, due, time.Minute), t0) || len(spec.GracefulEvictionTasks) != 0 {
		t.Errorf("evicting from a member the binding is not on changed it: %+v", spec)
	}

	// A second eviction before the scheduler took the first member out:
	// the placement before it does not count the member already leaving.
	spec = &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 4, "m2", 2, "m3", 1)}
	Evict(spec, "m2", TaintCause(spec, due, time.Minute), t0)
	Evict(spec, "m3", TaintCause(spec, due, time.Minute), t0)
	if task := spec.GracefulEvictionTasks[1]; task.FromCluster != "m3" || !slices.Equal(task.ClustersBeforeFailover, []string{"m1", "m3"}) {
		t.Errorf("second task = %+v, want m3's with clustersBeforeFailover [m1 m3]", task)
	}
}

// An evicted member stays in spec.clusters until the scheduler has decided
// on the generation that carries its task; after that, one still there was
// placed there again.
func TestAwaitingSchedulerUntilTheSchedulerObservedTheEviction(t *testing.T) {
	spec := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 4, "m2", 2),
		GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{{FromCluster: "m2"}}}
	for _, tt := range []struct {
		name     string
		observed int64
		member   string
		want     bool
	}{
		{"not yet decided", 4, "m2", true},
		{"decided, placed there again", 5, "m2", false},
		{"no task", 4, "m1", false},
	} {
		b := Binding{Generation: 5, Spec: spec, Status: &workv1alpha1.ResourceBindingStatus{SchedulerObservedGeneration: tt.observed}}
		if got := AwaitingScheduler(b, tt.member); got != tt.want {
			t.Errorf("%s: AwaitingScheduler = %v, want %v", tt.name, got, tt.want)
		}
	}
	left := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 4), GracefulEvictionTasks: spec.GracefulEvictionTasks}
	if AwaitingScheduler(Binding{Generation: 5, Spec: left, Status: &workv1alpha1.ResourceBindingStatus{}}, "m2") {
		t.Error("a member out of spec.clusters awaits the scheduler")
	}
}

// healthyOn is a binding status with every listed member applied and Healthy.
func healthyOn(generation int64, ready int32, members ...string) *workv1alpha1.ResourceBindingStatus {
	st := &workv1alpha1.ResourceBindingStatus{SchedulerObservedGeneration: generation, ReadyReplicas: ready,
		Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: metav1.ConditionTrue, ObservedGeneration: generation}}}
	for _, m := range members {
		st.AggregatedStatus = append(st.AggregatedStatus, workv1alpha1.AggregatedStatusItem{ClusterName: m, Applied: true, Health: workv1alpha1.ResourceHealthy})
	}
	return st
}

func TestPurgeModes(t *testing.T) {
	task := func(mode policyv1alpha1.PurgeMode, suppress *bool) *workv1alpha1.GracefulEvictionTask {
		return &workv1alpha1.GracefulEvictionTask{FromCluster: "m2", PurgeMode: mode, SuppressDeletion: suppress,
			GracePeriodSeconds: ptr.To[int32](600), CreationTimestamp: ptr.To(metav1.NewTime(t0))}
	}
	spec := &workv1alpha1.ResourceBindingSpec{Replicas: 6, Clusters: placed("m1", 6)}
	ready := Binding{Generation: 3, Spec: spec, Status: healthyOn(3, 6, "m1")}
	starting := Binding{Generation: 3, Spec: spec, Status: healthyOn(3, 4, "m1")}
	stale := Binding{Generation: 4, Spec: spec, Status: healthyOn(3, 6, "m1")}
	soon, late := t0.Add(time.Minute), t0.Add(10*time.Minute)
	nowhere := Binding{Generation: 3, Spec: &workv1alpha1.ResourceBindingSpec{Replicas: 6}, Status: healthyOn(3, 0)}
	downElsewhere := Binding{Generation: 3, Spec: spec, Status: healthyOn(3, 0, "m1")}
	downElsewhere.Status.AggregatedStatus[0].Health = workv1alpha1.ResourceUnhealthy
	placedAgain := Binding{Generation: 3, Spec: &workv1alpha1.ResourceBindingSpec{Replicas: 6, Clusters: placed("m2", 6)}, Status: healthyOn(3, 0)}
	leaving := &workv1alpha1.ResourceBindingSpec{Replicas: 6, Clusters: placed("m1", 3, "m2", 3), GracefulEvictionTasks: []workv1alpha1.GracefulEvictionTask{*task(policyv1alpha1.PurgeModeDirectly, nil)}}
	awaiting := Binding{Generation: 4, Spec: leaving, Status: healthyOn(3, 6, "m1", "m2")}
	tests := []struct {
		name        string
		task        *workv1alpha1.GracefulEvictionTask
		b           Binding
		workGone    bool
		now         time.Time
		remove, del bool
		recheckAt   time.Time
		why         string
	}{
		{"Gracefully: kept while the replacement is not Ready", task(policyv1alpha1.PurgeModeGracefully, nil), starting, false, soon, false, false, late, "4 of 6 replicas Ready"},
		{"Gracefully: kept until the scheduler has seen the eviction", task(policyv1alpha1.PurgeModeGracefully, nil), stale, false, soon, false, false, late, "not yet rescheduled"},
		{"Gracefully: removed once the replacement is Ready", task(policyv1alpha1.PurgeModeGracefully, nil), ready, false, soon, true, false, time.Time{}, "healthy on m1"},
		{"Gracefully: removed when the grace period passes", task(policyv1alpha1.PurgeModeGracefully, nil), starting, false, late, true, false, time.Time{}, "grace period of 10m0s passed"},
		{"Gracefully: past the grace period the last copy stays while the replacement is placed nowhere", task(policyv1alpha1.PurgeModeGracefully, nil), nowhere, false, late, false, false, time.Time{}, "the copy on m2 is the last one running (placed on no member)"},
		{"Gracefully: past the grace period the last copy stays while the replacement is healthy nowhere", task(policyv1alpha1.PurgeModeGracefully, nil), downElsewhere, false, late, false, false, time.Time{}, "the copy on m2 is the last one running (not yet healthy on m1)"},
		{"Gracefully: removed when the scheduler placed it on the member again", task(policyv1alpha1.PurgeModeGracefully, nil), placedAgain, false, soon, true, false, time.Time{}, "placed on m2 again"},
		{"Gracefully: kept, past the grace period too, while the scheduler has not taken the member out", task(policyv1alpha1.PurgeModeGracefully, nil), awaiting, false, late, false, false, time.Time{}, "waiting for the scheduler"},
		{"Directly: the Work is not deleted while the member is still the placement", task(policyv1alpha1.PurgeModeDirectly, nil), awaiting, false, late, false, false, time.Time{}, "waiting for the scheduler"},
		{"Directly: the old Work is deleted first", task(policyv1alpha1.PurgeModeDirectly, nil), starting, false, soon, false, true, late, "removing the copy on m2 first"},
		{"Directly: removed once the old Work is gone", task(policyv1alpha1.PurgeModeDirectly, nil), starting, true, soon, true, false, time.Time{}, "the copy on m2 is removed"},
		{"Directly: removed when the deletion is not confirmed in time", task(policyv1alpha1.PurgeModeDirectly, nil), starting, false, late, true, false, time.Time{}, "not confirmed removed"},
		{"Never: kept for good", task(policyv1alpha1.Never, ptr.To(true)), ready, true, late, false, false, time.Time{}, "until an operator"},
		{"Never without suppressDeletion: kept", task(policyv1alpha1.Never, nil), ready, true, late, false, false, time.Time{}, "until an operator"},
		{"Never released by an operator", task(policyv1alpha1.Never, ptr.To(false)), starting, false, soon, true, false, time.Time{}, "released by an operator"},
		{"suppressDeletion holds any mode", task(policyv1alpha1.PurgeModeGracefully, ptr.To(true)), ready, false, late, false, false, time.Time{}, "until an operator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := PurgeOf(tt.task, tt.b, tt.workGone, time.Hour, tt.now)
			if got.Remove != tt.remove || got.DeleteWork != tt.del || !got.RecheckAt.Equal(tt.recheckAt) || !strings.Contains(got.Why, tt.why) {
				t.Errorf("PurgeOf = %+v; want remove %v deleteWork %v recheck %v why ~%q", got, tt.remove, tt.del, tt.recheckAt, tt.why)
			}
		})
	}
}

func TestReplacementNeedsEveryNewMemberHealthy(t *testing.T) {
	spec := &workv1alpha1.ResourceBindingSpec{Replicas: 6, Clusters: placed("m1", 3, "m3", 3)}
	st := healthyOn(2, 6, "m1", "m3")
	st.AggregatedStatus[1].Health = workv1alpha1.ResourceUnhealthy
	if ok, why := Replacement(Binding{Generation: 2, Spec: spec, Status: st}); ok || why != "not yet healthy on m3" {
		t.Errorf("Replacement = %v %q, want false, not yet healthy on m3", ok, why)
	}
	empty := &workv1alpha1.ResourceBindingSpec{Replicas: 6}
	if ok, why := Replacement(Binding{Generation: 2, Spec: empty, Status: healthyOn(2, 0)}); ok || why != "placed on no member" {
		t.Errorf("Replacement of an unplaced binding = %v %q", ok, why)
	}
	service := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 0)}
	if ok, _ := Replacement(Binding{Generation: 1, Spec: service, Status: healthyOn(1, 0, "m1")}); !ok {
		t.Error("a template without replicas is replaced once applied and healthy")
	}
}
