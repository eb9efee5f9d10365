package binding

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// cacheReader serves objects as the manager's informer cache does: Get
// copies one object; List with UnsafeDisableDeepCopy hands out shallow
// copies of the cached members (controller-runtime's cache sets the list's
// items from its stored pointers), without it deep copies.
type cacheReader struct {
	members []clusterv1alpha1.MemberCluster
	binding *workv1alpha1.ResourceBinding
}

func (c *cacheReader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.binding.DeepCopyInto(obj.(*workv1alpha1.ResourceBinding))
	return nil
}

func (c *cacheReader) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := &client.ListOptions{}
	o.ApplyOptions(opts)
	out := list.(*clusterv1alpha1.MemberClusterList)
	out.Items = make([]clusterv1alpha1.MemberCluster, len(c.members))
	if o.UnsafeDisableDeepCopy != nil && *o.UnsafeDisableDeepCopy {
		copy(out.Items, c.members)
		return nil
	}
	for i := range c.members {
		c.members[i].DeepCopyInto(&out.Items[i])
	}
	return nil
}

var _ client.Reader = &cacheReader{}

// benchBindingOf is the internal/scheduler benchmarks' binding: a Deployment
// of 100 replicas × 100m CPU, here as the ResourceBinding the controller reads.
func benchBindingOf(p *policyv1alpha1.Placement) *workv1alpha1.ResourceBinding {
	return &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "web-deployment", Generation: 1},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:            workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "bench", Name: "web"},
			Replicas:            100,
			ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			Placement:           p,
		},
	}
}

var benchPlacements = []struct {
	name      string
	placement *policyv1alpha1.Placement
}{
	{"Duplicated", &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "r0"}}},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
	}},
	{"DividedDynamic", &policyv1alpha1.Placement{
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
			ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
			ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceWeighted,
			WeightPreference:          &policyv1alpha1.ClusterPreferences{DynamicWeight: policyv1alpha1.DynamicWeightByAvailableReplicas},
		},
	}},
}

// BenchmarkControllerPathDecision is what the scheduling controller does
// for one binding, but the API write: read the binding from the cache, get
// the fleet's snapshot (reused until a member event), decide and record the
// decision on the binding and what it read (decidedInputs). "rebuilt"
// changes one member before each decision, so the snapshot is compiled anew
// every time: the cost of a decision right after a member's status changed.
func BenchmarkControllerPathDecision(b *testing.B) {
	for _, p := range benchPlacements {
		for _, n := range []int{100, 1000, 10000} {
			for _, rebuilt := range []bool{false, true} {
				name := fmt.Sprintf("%s/%d/reused", p.name, n)
				if rebuilt {
					name = fmt.Sprintf("%s/%d/rebuilt", p.name, n)
				}
				b.Run(name, func(b *testing.B) {
					reader := &cacheReader{members: st.BenchFleet(n), binding: benchBindingOf(p.placement)}
					sched := scheduler.New()
					r := &Placer{Scheduler: sched, Recorder: &events.FakeRecorder{}}
					r.snapshots = &snapshots{reader: reader, sched: sched}
					ctx := context.Background()
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						if rebuilt {
							i++
							reader.members[i%n].ResourceVersion = fmt.Sprint(i)
							r.snapshots.memberChanged() // what the member informer's event does
						}
						binding := &workv1alpha1.ResourceBinding{}
						if err := reader.Get(ctx, client.ObjectKey{Namespace: "bench", Name: "web-deployment"}, binding); err != nil {
							b.Fatal(err)
						}
						snap, err := r.snapshots.get(ctx)
						if err != nil {
							b.Fatal(err)
						}
						r.schedule(ctx, snap, binding)
						r.decided.record("bench/web-deployment", binding, 0)
						if len(binding.Spec.Clusters) == 0 {
							b.Fatalf("not placed: %v", meta.FindStatusCondition(binding.Status.Conditions, workv1alpha1.ConditionScheduled))
						}
					}
				})
			}
		}
	}
}
