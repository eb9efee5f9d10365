package binding

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
	"github.com/flotilla-io/flotilla/test/listedcache"
)

// BenchmarkReadABindingsWorks reads one binding's Works the way the render
// and aggregate phases do, through controller-runtime's informer cache
// holding the Works of 10,000 bindings Duplicated on three members (30,000,
// the memory benchmark's fleet), with the index the manager registers
// (IndexWorksByBinding), against the label selector the phases used before.
// "completes" is the aggregate phase's check on each Work report.
//
// The informer is filled from a list served in memory instead of an API
// server: what is measured is the cache's read, not the fill.
func BenchmarkReadABindingsWorks(b *testing.B) {
	const bindings = 10_000
	members := []string{"member1", "member2", "member3"}
	works := make([]workv1alpha1.Work, 0, bindings*len(members))
	for i := range bindings {
		id := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
		for _, m := range members {
			works = append(works, benchWork(clusterv1alpha1.ExecutionNamespace(m), WorkName(KindResourceBinding, "bench", fmt.Sprintf("web-%d", i)), id))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := listedcache.Start(ctx, b, hubscheme.New(), &workv1alpha1.WorkList{Items: works}, true, func(i client.FieldIndexer) error {
		return IndexWorksByBinding(ctx, i)
	})
	aggregator := &Aggregator{Client: c}
	probe := &works[len(works)/2]
	id := probe.Labels[workv1alpha1.BindingPermanentIDLabel]

	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			list, err := listWorksOf(ctx, c, id)
			if err != nil || len(list.Items) != len(members) {
				b.Fatalf("%d Works, %v; want %d", len(list.Items), err, len(members))
			}
		}
	})
	b.Run("labelSelector", func(b *testing.B) {
		for b.Loop() {
			list := &workv1alpha1.WorkList{}
			if err := c.List(ctx, list, client.MatchingLabels{workv1alpha1.BindingPermanentIDLabel: id}); err != nil || len(list.Items) != len(members) {
				b.Fatalf("%d Works, %v; want %d", len(list.Items), err, len(members))
			}
		}
	})
	b.Run("completes", func(b *testing.B) {
		for b.Loop() {
			if !aggregator.completes(ctx, probe) {
				b.Fatal("the binding's Works are all Available, completes says not")
			}
		}
	})
}

func benchWork(namespace, name, bindingID string) workv1alpha1.Work {
	w := workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, UID: types.UID(namespace + "/" + name), ResourceVersion: "1", Generation: 1,
			Labels: map[string]string{workv1alpha1.BindingPermanentIDLabel: bindingID},
			Annotations: map[string]string{
				workv1alpha1.BindingKindAnnotation: KindResourceBinding, workv1alpha1.BindingNamespaceAnnotation: "bench",
				workv1alpha1.BindingNameAnnotation: name,
			},
		},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"bench","name":"web"},"spec":{"replicas":2}}`),
		}}}}},
	}
	w.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkAvailable, Status: metav1.ConditionTrue, Reason: "Available", ObservedGeneration: 1}}
	return w
}
