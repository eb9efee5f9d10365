package enrolment

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// countingMapper counts the mappings asked of it: one per manifest decoded.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	m.asked++
	return m.RESTMapper.RESTMapping(gk, versions...)
}

func needsWork(uid string, generation int64, manifests ...string) workv1alpha1.Work {
	w := workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-es-m1", Name: uid, UID: types.UID(uid), Generation: generation}}
	for _, m := range manifests {
		w.Spec.Workload.Manifests = append(w.Spec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return w
}

func TestAWorksNeedIsDecodedOnceForEachGeneration(t *testing.T) {
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"shop","name":"web"}}`
	deploymentInBilling := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"namespace":"billing","name":"web"}}`
	widget := `{"apiVersion":"example.io/v1","kind":"Widget","metadata":{"namespace":"lab","name":"w"}}`
	static := meta.NewDefaultRESTMapper(nil)
	static.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper := &countingMapper{RESTMapper: static}
	var n workNeeds

	works := []workv1alpha1.Work{needsWork("a", 1, deployment), needsWork("b", 1, widget)}
	needs := n.of(mapper, "m1", works)
	if got := needs[0].Namespaces; len(got) != 1 || got[0] != "shop" {
		t.Fatalf("need of a: namespaces %v, want [shop]", got)
	}
	if len(needs[1].Namespaces) != 0 {
		t.Fatalf("need of b, whose kind the hub does not serve: %v, want nothing", needs[1])
	}
	if mapper.asked != 2 {
		t.Fatalf("%d mappings for two new Works, want 2", mapper.asked)
	}

	mapper.asked = 0
	n.of(mapper, "m1", works)
	if mapper.asked != 1 {
		t.Fatalf("the same Works again: %d mappings, want 1 (b's kind asked again, a remembered)", mapper.asked)
	}

	// Widget is served now: b's need grows.
	static.Add(schema.GroupVersionKind{Group: "example.io", Version: "v1", Kind: "Widget"}, meta.RESTScopeNamespace)
	needs = n.of(mapper, "m1", works)
	if got := needs[1].Namespaces; len(got) != 1 || got[0] != "lab" {
		t.Fatalf("need of b once Widget is served: namespaces %v, want [lab]", got)
	}

	// A new generation of a is decoded again.
	mapper.asked = 0
	works[0] = needsWork("a", 2, deploymentInBilling)
	needs = n.of(mapper, "m1", works)
	if got := needs[0].Namespaces; len(got) != 1 || got[0] != "billing" {
		t.Fatalf("need of a at generation 2: namespaces %v, want [billing]", got)
	}
	if mapper.asked != 1 {
		t.Fatalf("a's new generation: %d mappings, want 1", mapper.asked)
	}

	// Works gone are forgotten; another member's are kept apart.
	n.of(mapper, "m2", []workv1alpha1.Work{needsWork("c", 1, deployment)})
	n.of(mapper, "m1", works[:1])
	if got1, got2 := n.memo.Len("m1"), n.memo.Len("m2"); got1 != 1 || got2 != 1 {
		t.Fatalf("remembered after b went: %d Works of m1, %d of m2; want 1 and 1", got1, got2)
	}
	n.of(mapper, "m1", nil)
	if got := n.memo.Len("m1"); got != 0 {
		t.Fatalf("m1 without Works: %d still remembered", got)
	}
}
