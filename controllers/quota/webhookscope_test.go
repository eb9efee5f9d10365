package quota

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestScopedSelector(t *testing.T) {
	federated := map[string]string{"flotilla.io/federated": "true"}
	nameIn := func(values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpIn, Values: values}
	}
	team := metav1.LabelSelectorRequirement{Key: "team", Operator: metav1.LabelSelectorOpExists}
	for _, tc := range []struct {
		name       string
		installed  *metav1.LabelSelector
		namespaces []string
		want       *metav1.LabelSelector
	}{{
		name:       "the installed selector gets the namespaces with a quota",
		installed:  &metav1.LabelSelector{MatchLabels: federated},
		namespaces: []string{"a", "b"},
		want:       &metav1.LabelSelector{MatchLabels: federated, MatchExpressions: []metav1.LabelSelectorRequirement{nameIn("a", "b")}},
	}, {
		name:       "no quota anywhere: a requirement no namespace meets",
		installed:  &metav1.LabelSelector{MatchLabels: federated},
		namespaces: nil,
		want:       &metav1.LabelSelector{MatchLabels: federated, MatchExpressions: []metav1.LabelSelectorRequirement{nameIn("")}},
	}, {
		name:       "the scope written before is replaced; an installer's own requirements stay",
		installed:  &metav1.LabelSelector{MatchLabels: federated, MatchExpressions: []metav1.LabelSelectorRequirement{team, nameIn("gone")}},
		namespaces: []string{"a"},
		want:       &metav1.LabelSelector{MatchLabels: federated, MatchExpressions: []metav1.LabelSelectorRequirement{team, nameIn("a")}},
	}, {
		name:       "no installed selector",
		installed:  nil,
		namespaces: []string{"a"},
		want:       &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{nameIn("a")}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var before *metav1.LabelSelector
			if tc.installed != nil {
				before = tc.installed.DeepCopy()
			}
			got := ScopedSelector(tc.installed, tc.namespaces)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("ScopedSelector = %v, want %v", got, tc.want)
			}
			if !equality.Semantic.DeepEqual(tc.installed, before) {
				t.Errorf("the installed selector was changed in place: %v", tc.installed)
			}
			if _, err := metav1.LabelSelectorAsSelector(got); err != nil {
				t.Errorf("not a valid selector: %v", err)
			}
		})
	}

	// In [""] matches no namespace: every namespace carries its name.
	s, err := metav1.LabelSelectorAsSelector(ScopedSelector(&metav1.LabelSelector{MatchLabels: federated}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if s.Matches(labels.Set{"flotilla.io/federated": "true", "kubernetes.io/metadata.name": "tenant"}) {
		t.Error("the empty scope matches a federated namespace")
	}
}
