package capacity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func resources(pairs ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		l[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return l
}

func nodes(count int32, free corev1.ResourceList) clusterv1alpha1.NodeGroup {
	return clusterv1alpha1.NodeGroup{Count: count, Free: free}
}

func model(groups ...clusterv1alpha1.NodeGroup) *clusterv1alpha1.CapacityModel {
	return &clusterv1alpha1.CapacityModel{NodeGroups: groups}
}

func requests(pairs ...string) *workv1alpha1.ReplicaRequirements {
	return &workv1alpha1.ReplicaRequirements{ResourceRequest: resources(pairs...)}
}

func withLabels(g clusterv1alpha1.NodeGroup, labels map[string]string) clusterv1alpha1.NodeGroup {
	g.Labels = labels
	return g
}

func withTaints(g clusterv1alpha1.NodeGroup, taints ...corev1.Taint) clusterv1alpha1.NodeGroup {
	g.Taints = taints
	return g
}

func withClaim(rr *workv1alpha1.ReplicaRequirements, claim workv1alpha1.NodeClaim) *workv1alpha1.ReplicaRequirements {
	rr.NodeClaim = &claim
	return rr
}

func TestFitCountsReplicasNodeByNode(t *testing.T) {
	node4cpu := resources("cpu", "4", "memory", "8Gi", "pods", "110")
	gpuTaint := corev1.Taint{Key: "gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule}

	tests := []struct {
		name  string
		model *clusterv1alpha1.CapacityModel
		req   *workv1alpha1.ReplicaRequirements
		want  int64
	}{
		{"cpu bounds: 2 nodes x floor(4/1)", model(nodes(2, node4cpu)), requests("cpu", "1", "memory", "1Gi"), 8},
		{"memory bounds: 2 nodes x floor(8Gi/3Gi)", model(nodes(2, node4cpu)), requests("cpu", "100m", "memory", "3Gi"), 4},
		{"fractional cpu: floor(1500m/400m) per node", model(nodes(1, resources("cpu", "1500m", "pods", "10"))), requests("cpu", "400m"), 3},
		{"pods bound: every replica takes one pod slot", model(nodes(3, resources("cpu", "64", "pods", "2"))), requests("cpu", "100m"), 6},
		{"no pods resource free means no slot", model(nodes(3, resources("cpu", "64"))), requests("cpu", "100m"), 0},
		{"nil requirements take only the pod slot", model(nodes(2, resources("pods", "5"))), nil, 10},
		{"zero request constrains nothing", model(nodes(1, resources("cpu", "1", "pods", "7"))), requests("cpu", "0", "memory", "0"), 7},
		{"fit is per node, not per member sum: 2 nodes x 1.5 cpu hold 2 of 1 cpu", model(nodes(2, resources("cpu", "1500m", "pods", "10"))), requests("cpu", "1"), 2},
		{"extended resource only on the gpu group", model(
			nodes(4, node4cpu),
			nodes(3, resources("cpu", "8", "pods", "10", "nvidia.com/gpu", "2")),
		), requests("cpu", "1", "nvidia.com/gpu", "1"), 6},
		{"groups add up", model(nodes(2, node4cpu), nodes(1, resources("cpu", "16", "memory", "64Gi", "pods", "110"))), requests("cpu", "2"), 4 + 8},
		{"negative free counts as none", model(nodes(1, resources("cpu", "-1", "pods", "10"))), requests("cpu", "1"), 0},
		{"nodeSelector picks the matching group", model(
			withLabels(nodes(2, node4cpu), map[string]string{"disk": "ssd"}),
			withLabels(nodes(5, node4cpu), map[string]string{"disk": "hdd"}),
		), withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{NodeSelector: map[string]string{"disk": "ssd"}}), 8},
		{"NoSchedule taint without toleration excludes the group", model(nodes(2, node4cpu), withTaints(nodes(5, node4cpu), gpuTaint)), requests("cpu", "1"), 8},
		{"NoExecute taint without toleration excludes the group", model(withTaints(nodes(5, node4cpu), corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute})), requests("cpu", "1"), 0},
		{"PreferNoSchedule taint does not exclude", model(withTaints(nodes(1, node4cpu), corev1.Taint{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule})), requests("cpu", "1"), 4},
		{"tolerated taint admits", model(nodes(2, node4cpu), withTaints(nodes(5, node4cpu), gpuTaint)),
			withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "true"}}}), 28},
		{"hard node affinity In", model(
			withLabels(nodes(1, node4cpu), map[string]string{"zone": "a"}),
			withLabels(nodes(1, node4cpu), map[string]string{"zone": "b"}),
			nodes(1, node4cpu),
		), withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a", "b"}}}},
		}}}), 8},
		{"hard node affinity NotIn matches nodes without the label", model(
			withLabels(nodes(1, node4cpu), map[string]string{"zone": "a"}),
			nodes(1, node4cpu),
		), withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a"}}}},
		}}}), 4},
		{"hard node affinity terms are ORed", model(
			withLabels(nodes(1, node4cpu), map[string]string{"zone": "a"}),
			withLabels(nodes(1, node4cpu), map[string]string{"gen": "7"}),
		), withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "gen", Operator: corev1.NodeSelectorOpGt, Values: []string{"5"}}}},
		}}}), 8},
		{"hard node affinity by node name cannot be shown to match a group", model(nodes(1, node4cpu)),
			withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
				{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"n1"}}}},
			}}}), 0},
		{"hard node affinity without terms matches nothing", model(nodes(1, node4cpu)),
			withClaim(requests("cpu", "1"), workv1alpha1.NodeClaim{HardNodeAffinity: &corev1.NodeSelector{}}), 0},
		{"empty model fits nothing", model(), requests("cpu", "1"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Fit(tt.model, tt.req); got != tt.want {
				t.Errorf("Fit = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFitOfNilModelIsZero(t *testing.T) {
	if got := Fit(nil, requests("cpu", "1")); got != 0 {
		t.Errorf("Fit(nil) = %d, want 0", got)
	}
}

func TestFitSaturatesInsteadOfOverflowing(t *testing.T) {
	huge := model(nodes(2_000_000_000, resources("pods", "9000000000000")))
	if got := Fit(huge, nil); got != unlimited {
		t.Errorf("Fit = %d, want saturation at %d", got, int64(unlimited))
	}
}
