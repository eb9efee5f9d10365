package eviction

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func item(member string, health workv1alpha1.ResourceHealth, since time.Time, status string) workv1alpha1.AggregatedStatusItem {
	it := workv1alpha1.AggregatedStatusItem{ClusterName: member, Applied: true, Health: health, HealthTransitionTime: ptr.To(metav1.NewTime(since))}
	if status != "" {
		it.Status = &runtime.RawExtension{Raw: []byte(status)}
	}
	return it
}

func TestApplicationDuesCountTolerationSecondsFromWhenTheWorkloadTurnedUnhealthy(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	app := func(seconds *int32) *policyv1alpha1.FailoverBehavior {
		return &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: seconds}}}
	}
	status := &workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
		item("m1", workv1alpha1.ResourceHealthy, t0, ""),
		item("m2", workv1alpha1.ResourceUnhealthy, t0, ""),
		item("m3", workv1alpha1.ResourceUnknown, t0, ""),
		item("gone", workv1alpha1.ResourceUnhealthy, t0, ""), // no longer in spec.clusters
	}}
	for _, tt := range []struct {
		name     string
		failover *policyv1alpha1.FailoverBehavior
		want     []ApplicationDue
	}{
		{"no failover.application: never", &policyv1alpha1.FailoverBehavior{Cluster: &policyv1alpha1.ClusterFailoverBehavior{}}, nil},
		{"tolerationSeconds 60: the Unhealthy member only, 60 s after it turned so", app(ptr.To[int32](60)), []ApplicationDue{{Member: "m2", At: t0.Add(time.Minute), Since: t0}}},
		{"unset: Karmada's 300 s", app(nil), []ApplicationDue{{Member: "m2", At: t0.Add(5 * time.Minute), Since: t0}}},
		{"0: at once", app(ptr.To[int32](0)), []ApplicationDue{{Member: "m2", At: t0, Since: t0}}},
		{"placed back on a member it was evicted from (nowhere else to go): not again", func() *policyv1alpha1.FailoverBehavior {
			return app(ptr.To[int32](0))
		}(), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 2, "m2", 1, "m3", 1), Failover: tt.failover}
			if strings.HasPrefix(tt.name, "placed back") {
				spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "m2"}}
			}
			if got := ApplicationDuesOf(spec, status); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ApplicationDuesOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestApplicationFailoverEvictsWithThePolicysPurgeModeGraceAndPreservedState(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	spec := &workv1alpha1.ResourceBindingSpec{Clusters: placed("m1", 2, "m2", 1), Failover: &policyv1alpha1.FailoverBehavior{
		Application: &policyv1alpha1.ApplicationFailoverBehavior{
			DecisionConditions: policyv1alpha1.DecisionConditions{TolerationSeconds: ptr.To[int32](30)},
			PurgeMode:          policyv1alpha1.PurgeModeGracefully, GracePeriodSeconds: ptr.To[int32](120),
			StatePreservation: &policyv1alpha1.StatePreservation{Rules: []policyv1alpha1.StatePreservationRule{
				{AliasLabelName: "failover.example.io/ready", JSONPath: "{ .readyReplicas }"},
				{AliasLabelName: "failover.example.io/phase", JSONPath: "{.phase}"},
			}},
		}}}
	status := &workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
		item("m1", workv1alpha1.ResourceHealthy, t0, `{"readyReplicas":2}`),
		item("m2", workv1alpha1.ResourceUnhealthy, t0, `{"readyReplicas":0,"phase":"Stuck"}`),
	}}
	dues := ApplicationDuesOf(spec, status)
	if len(dues) != 1 {
		t.Fatalf("dues = %+v", dues)
	}
	cause, err := ApplicationCause(spec, status, dues[0])
	if err != nil {
		t.Fatal(err)
	}
	if !Evict(spec, "m2", cause, t0.Add(time.Minute)) {
		t.Fatal("Evict = false")
	}
	task := spec.GracefulEvictionTasks[0]
	want := map[string]string{"failover.example.io/ready": "0", "failover.example.io/phase": "Stuck"}
	if task.Reason != "ApplicationFailure" || task.Producer != workv1alpha1.EvictionProducerApplicationFailover ||
		task.PurgeMode != policyv1alpha1.PurgeModeGracefully || *task.GracePeriodSeconds != 120 ||
		!equality.Semantic.DeepEqual(task.PreservedLabelState, want) ||
		task.Message != "the workload has been Unhealthy on member m2 since 2026-12-02T10:00:00Z, past decisionConditions.tolerationSeconds (30s)" {
		t.Errorf("task = %+v", task)
	}
	if got := PreservedLabelsFor(spec, "m3"); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("labels for the replacement on m3 = %v, want %v", got, want)
	}
	if got := PreservedLabelsFor(spec, "m1"); got != nil {
		t.Errorf("labels for m1, placed before the failover = %v, want none", got)
	}
}

func TestAStatePreservationRuleThatCannotBeReadSaysWhich(t *testing.T) {
	_, err := PreservedState([]policyv1alpha1.StatePreservationRule{{AliasLabelName: "x", JSONPath: "{.missing}"}}, map[string]any{"ready": 1})
	if err == nil || err.Error() != `statePreservation rule x: jsonPath "{.missing}" on the failed copy's status: missing is not found` {
		t.Errorf("err = %v", err)
	}
}
