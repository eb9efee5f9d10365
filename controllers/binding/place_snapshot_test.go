package binding

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// countingReader is the member cache, counting how often it is listed.
type countingReader struct {
	cacheReader
	lists int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.cacheReader.List(ctx, list, opts...)
}

// The snapshot is reused without looking at the fleet until a member event
// comes, and then compiled from the cache again: a member added, updated or
// deleted shows in the next decision's snapshot.
func TestSnapshotIsReusedUntilAMemberEvent(t *testing.T) {
	ctx := context.Background()
	reader := &countingReader{cacheReader: cacheReader{members: []clusterv1alpha1.MemberCluster{st.Member("m1"), st.Member("m2")}}}
	s := &snapshots{reader: reader, sched: scheduler.New()}

	first, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		again, err := s.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if again != first {
			t.Fatal("snapshot compiled again with no member event")
		}
	}
	if reader.lists != 1 {
		t.Fatalf("fleet listed %d times for 101 decisions with no member event, want 1", reader.lists)
	}

	// A member joins: the informer has it in its store, then its event.
	reader.members = append(reader.members, st.Member("m3"))
	if snap, _ := s.get(ctx); snap != first {
		t.Fatal("snapshot changed before the member event: it looked at the fleet")
	}
	s.memberChanged()
	snap, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap == first || snap.Len() != 3 {
		t.Fatalf("after the member event the snapshot holds %d members, want 3 (compiled again)", snap.Len())
	}
	if _, ok := snap.Lookup("m3"); !ok {
		t.Fatal("m3 missing from the snapshot after its event")
	}

	// A member leaves.
	reader.members = reader.members[1:]
	s.memberChanged()
	snap, err = s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Lookup("m1"); ok || snap.Len() != 2 {
		t.Fatalf("after m1's delete event the snapshot holds %v", snap.Names())
	}
	if reader.lists != 3 {
		t.Fatalf("fleet listed %d times, want 3 (one per member event)", reader.lists)
	}
}

// A binding that a member's change queues is decided on a snapshot listed
// after that change, whichever of the informer's handlers runs first: the
// handler that queues it tells the snapshot before it queues.
func TestABindingQueuedByAMemberChangeSeesTheChange(t *testing.T) {
	ctx := context.Background()
	reader := &countingReader{cacheReader: cacheReader{members: []clusterv1alpha1.MemberCluster{st.Member("m1")}}}
	rb := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-deployment"}}
	r := &Placer{Client: newFakeCache(workScheme(t)).WithObjects(rb).Build()}
	r.snapshots = &snapshots{reader: reader, sched: scheduler.New()}
	if _, err := r.snapshots.get(ctx); err != nil {
		t.Fatal(err)
	}

	// m2 joins the cache; the queueing handler runs before the
	// snapshot's own one.
	reader.members = append(reader.members, st.Member("m2"))
	reqs := r.enqueueAll(&workv1alpha1.ResourceBindingList{})(ctx, &reader.members[1])
	if len(reqs) != 1 {
		t.Fatalf("queued %v, want the one binding", reqs)
	}
	snap, err := r.snapshots.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Lookup("m2"); !ok {
		t.Fatalf("the queued binding would be decided on %v, without m2 whose change queued it", snap.Names())
	}
}

func workScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}
