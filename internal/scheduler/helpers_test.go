package scheduler_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// deployment is a binding of replicas × 1 CPU under placement.
func deployment(replicas int32, placement *policyv1alpha1.Placement) scheduler.Input {
	return scheduler.Input{
		Key: "shop/web", Namespace: "shop", APIVersion: "apps/v1", Kind: "Deployment",
		Replicas:     replicas,
		Requirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
		Placement:    placement,
	}
}

func duplicated() *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}
}

func divided(pref policyv1alpha1.ReplicaDivisionPreference, weights *policyv1alpha1.ClusterPreferences) *policyv1alpha1.Placement {
	return &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
		ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
		ReplicaDivisionPreference: pref,
		WeightPreference:          weights,
	}}
}

func equalWeights() *policyv1alpha1.Placement {
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, nil)
}

func dynamicWeights() *policyv1alpha1.Placement {
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted,
		&policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas})
}

func aggregated() *policyv1alpha1.Placement {
	return divided(policyv1alpha1.ReplicaDivisionPreferenceAggregated, nil)
}

// staticWeights weighs members by name: "a", 2, "b", 1.
func staticWeights(pairs ...any) *policyv1alpha1.Placement {
	prefs := &policyv1alpha1.ClusterPreferences{}
	for i := 0; i+1 < len(pairs); i += 2 {
		prefs.StaticWeightList = append(prefs.StaticWeightList, policyv1alpha1.StaticClusterWeight{
			TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{pairs[i].(string)}},
			Weight:        int64(pairs[i+1].(int)),
		})
	}
	return divided(policyv1alpha1.ReplicaDivisionPreferenceWeighted, prefs)
}

// with changes a placement in place and returns it.
func with(p *policyv1alpha1.Placement, change func(p *policyv1alpha1.Placement)) *policyv1alpha1.Placement {
	change(p)
	return p
}

// current is a placement given as "a", 3, "b", 2.
func current(pairs ...any) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, workv1alpha1.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
	}
	return out
}

// placed renders a placement as "a:3 b:2" for stated results.
func placed(tcs []workv1alpha1.TargetCluster) string {
	parts := make([]string, len(tcs))
	for i, tc := range tcs {
		parts[i] = fmt.Sprintf("%s:%d", tc.Name, tc.Replicas)
	}
	return strings.Join(parts, " ")
}

// mustSchedule places in on a fresh scheduler and fails the test on error.
func mustSchedule(t *testing.T, snap *scheduler.Snapshot, in scheduler.Input) *scheduler.Result {
	t.Helper()
	res, err := scheduler.New().Schedule(snap, in)
	if err != nil {
		t.Fatalf("Schedule: %v", err)
	}
	return res
}
