package execution

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestAMembersWorksBeyondTheBoundWaitAndAreHandedBackInOrder(t *testing.T) {
	ready := make(chan event.GenericEvent, 10)
	f := newInFlight(2, ready)
	w := func(n string) types.NamespacedName { return types.NamespacedName{Namespace: "flotilla-es-m1", Name: n} }
	if !f.acquire("m1", w("a")) || !f.acquire("m1", w("b")) {
		t.Fatal("two Works of m1 run at once")
	}
	if f.acquire("m1", w("c")) || f.acquire("m1", w("d")) || f.acquire("m1", w("c")) {
		t.Fatal("a third Work of m1 waits")
	}
	if !f.acquire("m2", types.NamespacedName{Namespace: "flotilla-es-m2", Name: "x"}) {
		t.Fatal("another member's Work is not held up by m1")
	}
	f.release("m1")
	f.release("m1")
	for _, want := range []string{"c", "d"} {
		select {
		case e := <-ready:
			if e.Object.GetName() != want || e.Object.GetNamespace() != "flotilla-es-m1" {
				t.Fatalf("handed back %s/%s, want %s", e.Object.GetNamespace(), e.Object.GetName(), want)
			}
		default:
			t.Fatalf("%s was not handed back", want)
		}
	}
	select {
	case e := <-ready:
		t.Fatalf("a Work waiting once is handed back once, got %s again", e.Object.GetName())
	default:
	}
	if !f.acquire("m1", w("c")) || !f.acquire("m1", w("d")) {
		t.Fatal("the handed-back Works take the freed slots")
	}
}
