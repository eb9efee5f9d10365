package applier

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
	"github.com/flotilla-io/flotilla/test/listedcache"
)

// BenchmarkWhatOtherWorksCarry is the check each removal from a member
// makes (an object another Work of the member still carries is kept),
// through controller-runtime's informer cache holding 10,000 Works of one
// member, each a Deployment: what withdrawing one Work costs in a fleet of
// 10,000 bindings, and a mass removal pays it per Work.
func BenchmarkWhatOtherWorksCarry(b *testing.B) {
	const works = 10_000
	const ns = "flotilla-es-member1"
	items := make([]workv1alpha1.Work, works)
	for i := range items {
		items[i] = workv1alpha1.Work{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("shop.web-%05d", i), UID: types.UID(fmt.Sprintf("uid-%05d", i)), Generation: 1},
			Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
				Raw: []byte(fmt.Sprintf(benchDeployment, i)),
			}}}}},
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := &Applier{Works: listedcache.Start(ctx, b, hubscheme.New(), &workv1alpha1.WorkList{Items: items}, true, nil)}
	withdrawn := &items[works/2]
	// The object of another Work, and the withdrawn Work's own.
	ids := []objectID{manifestIdentifiers(&items[works/3])[0], manifestIdentifiers(withdrawn)[0]}
	b.ReportAllocs()
	for b.Loop() {
		kept, err := a.stillCarried(ctx, withdrawn, ids)
		if err != nil || len(kept) != 1 || kept[0] != ids[0] {
			b.Fatalf("kept %v, %v; want %v only", kept, err, ids[0])
		}
	}
}

// benchDeployment is a Deployment as a template renders it (%05d: its number).
const benchDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web-%05d","namespace":"shop","labels":{"app":"web"}},` +
	`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},` +
	`"spec":{"containers":[{"name":"web","image":"registry.example/web:1.0","ports":[{"containerPort":8080}],` +
	`"resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]}}}}`

// What a Work carries is remembered per generation: a new generation that
// drops an object no longer keeps it, and a Work gone keeps nothing.
func TestWhatAWorkCarriesFollowsItsGenerations(t *testing.T) {
	ctx := context.Background()
	const ns = "flotilla-es-member1"
	work := func(name string, generation int64, deployments ...int) *workv1alpha1.Work {
		w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Generation: generation}}
		for _, d := range deployments {
			w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(fmt.Sprintf(benchDeployment, d))}})
		}
		return w
	}
	withdrawn := work("withdrawn", 1, 1, 2)
	ids := manifestIdentifiers(withdrawn)
	hub := fake.NewClientBuilder().WithScheme(hubscheme.New()).WithObjects(withdrawn, work("other", 1, 1)).Build()
	a := &Applier{Works: hub}
	if kept, err := a.stillCarried(ctx, withdrawn, ids); err != nil || len(kept) != 1 || kept[0] != ids[0] {
		t.Fatalf("kept %v, %v; want web-00001 only (the other Work carries it)", kept, err)
	}
	other := &workv1alpha1.Work{}
	if err := hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: "other"}, other); err != nil {
		t.Fatal(err)
	}
	other.Generation = 2
	other.Spec.Workload.Manifests = work("other", 2, 2).Spec.Workload.Manifests
	if err := hub.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	if kept, err := a.stillCarried(ctx, withdrawn, ids); err != nil || len(kept) != 1 || kept[0] != ids[1] {
		t.Fatalf("after the other Work's generation 2: kept %v, %v; want web-00002 only", kept, err)
	}
	if err := hub.Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	if kept, err := a.stillCarried(ctx, withdrawn, ids); err != nil || len(kept) != 0 {
		t.Fatalf("with the other Work gone: kept %v, %v; want nothing", kept, err)
	}
	if n := a.carried.Len(ns); n != 1 {
		t.Fatalf("%d Works remembered in %s, want 1 (the withdrawn one)", n, ns)
	}
}
