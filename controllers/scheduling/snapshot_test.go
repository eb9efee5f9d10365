package scheduling

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	st "github.com/flotilla-io/flotilla/internal/scheduler/schedulertest"
)

// countingReader counts the lists the snapshot makes.
type countingReader struct {
	cacheReader
	lists int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.cacheReader.List(ctx, list, opts...)
}

// The snapshot is reused, without even listing the fleet, until the
// MemberCluster informer reports a change; then it is rebuilt once, and
// shows the change.
func TestTheSnapshotIsRebuiltOnlyAfterAMemberChanges(t *testing.T) {
	ctx := context.Background()
	reader := &countingReader{cacheReader: cacheReader{members: st.BenchFleet(10)}}
	s := &snapshots{reader: reader, sched: scheduler.New()}
	events := s.handler()

	first, err := s.get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if again, _ := s.get(ctx); again != first {
			t.Fatal("the snapshot was rebuilt though no member changed")
		}
	}
	if reader.lists != 1 {
		t.Fatalf("listed the fleet %d times, want once", reader.lists)
	}

	for _, change := range []struct {
		name   string
		notify func(m *clusterv1alpha1.MemberCluster)
	}{
		{"update", func(m *clusterv1alpha1.MemberCluster) { events.OnUpdate(m, m) }},
		{"add", func(m *clusterv1alpha1.MemberCluster) { events.OnAdd(m, false) }},
		{"delete", func(m *clusterv1alpha1.MemberCluster) { events.OnDelete(m) }},
	} {
		before, _ := s.get(ctx)
		lists := reader.lists
		reader.members = append(reader.members, st.Member("m-"+change.name))
		change.notify(&reader.members[len(reader.members)-1])
		after, err := s.get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after == before || reader.lists != lists+1 {
			t.Fatalf("%s: the snapshot was not rebuilt once (lists %d → %d)", change.name, lists, reader.lists)
		}
		if len(after.Names()) != len(reader.members) {
			t.Fatalf("%s: the rebuilt snapshot has %d members, want %d", change.name, len(after.Names()), len(reader.members))
		}
		if again, _ := s.get(ctx); again != after {
			t.Fatalf("%s: rebuilt again without a change", change.name)
		}
	}
}
