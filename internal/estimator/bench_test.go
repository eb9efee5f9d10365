package estimator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// bigCluster is 5,000 Nodes in 10 pools over 3 zones with 30 Pods each of
// varied requests: the size the model's bound is designed for.
func bigCluster() ([]*corev1.Node, []*corev1.Pod) {
	r := rand.New(rand.NewPCG(5, 6))
	var nodes []*corev1.Node
	var pods []*corev1.Pod
	for i := range 5000 {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
				corev1.LabelHostname: name, corev1.LabelTopologyZone: fmt.Sprintf("zone-%d", i%3), "pool": fmt.Sprintf("pool-%d", i%10),
				corev1.LabelInstanceTypeStable: "m5.4xlarge", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
			}},
			Status: corev1.NodeStatus{
				Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("15890m"), corev1.ResourceMemory: resource.MustParse("62Gi"), corev1.ResourcePods: resource.MustParse("110")},
				Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			},
		})
		for range 30 {
			pods = append(pods, &corev1.Pod{
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(50*(1+r.Int64N(10)), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity((64<<20)*(1+r.Int64N(8)), resource.BinarySI),
				}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			})
		}
	}
	return nodes, pods
}

func BenchmarkBuild5000Nodes150kPods(b *testing.B) {
	nodes, pods := bigCluster()
	var res Result
	for b.Loop() {
		res = Build(nodes, pods, now, DefaultOptions())
	}
	out, _ := yaml.Marshal(res.Model)
	b.ReportMetric(float64(len(res.Model.NodeGroups)), "groups")
	b.ReportMetric(float64(len(out)), "model-bytes")
}
