package detector

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flotilla-io/flotilla/internal/policymatch"
)

func TestPolicyConditionStatesTheFirstReasonNothingPropagates(t *testing.T) {
	pp := policymatch.Policy{Ref: policymatch.Ref{Namespace: "apps", Name: "web"}}
	cpp := policymatch.Policy{Ref: policymatch.Ref{Cluster: true, Name: "all"}}
	fine := func(e evaluation) *evaluation {
		e.policyNamespaceFederated = true
		return &e
	}
	tests := []struct {
		name   string
		policy policymatch.Policy
		e      *evaluation
		want   metav1.Condition
	}{
		{
			name: "an invalid selector first", policy: pp,
			e:    &evaluation{invalid: []string{"resourceSelectors[0].apiVersion: unexpected GroupVersion string: a/b/c"}},
			want: metav1.Condition{Status: "False", Reason: "InvalidResourceSelector", Message: "resourceSelectors[0].apiVersion: unexpected GroupVersion string: a/b/c"},
		},
		{
			name: "a PropagationPolicy of a namespace not federated", policy: pp,
			e: &evaluation{selected: 2},
			want: metav1.Condition{Status: "False", Reason: "NamespaceNotFederated",
				Message: "namespace apps is not federated, so the templates this policy selects (2 now) stay on the hub: label it with `kubectl label namespace apps flotilla.io/federated=true`; " + keptNote},
		},
		{
			name: "a ClusterPropagationPolicy selecting in one namespace not federated", policy: cpp,
			e: fine(evaluation{selected: 5, claimed: 3, notFederated: map[string]int{"legacy": 2}}),
			want: metav1.Condition{Status: "False", Reason: "NamespaceNotFederated",
				Message: "2 of the 5 templates this policy selects stay on the hub because namespace legacy is not federated: label it with `kubectl label namespace legacy flotilla.io/federated=true`; " + keptNote},
		},
		{
			name: "a ClusterPropagationPolicy selecting in two namespaces not federated", policy: cpp,
			e: fine(evaluation{selected: 2, notFederated: map[string]int{"b": 1, "a": 1}}),
			want: metav1.Condition{Status: "False", Reason: "NamespaceNotFederated",
				Message: "2 of the 2 templates this policy selects stay on the hub because namespaces a, b are not federated: label each with `kubectl label namespace <name> flotilla.io/federated=true`; " + keptNote},
		},
		{
			name: "a kind the hub does not serve", policy: cpp,
			e:    fine(evaluation{unknownKinds: []string{"example.com/v1 Gadget"}}),
			want: metav1.Condition{Status: "False", Reason: "UnknownResourceKind", Message: "the hub serves no example.com/v1 Gadget: install the CRD on the hub, or correct the resourceSelectors"},
		},
		{
			name: "nothing selected", policy: pp,
			e:    fine(evaluation{}),
			want: metav1.Condition{Status: "False", Reason: "NoMatchingTemplates", Message: "no template matches the resourceSelectors"},
		},
		{
			name: "everything selected claimed by others", policy: pp,
			e: fine(evaluation{selected: 3, others: map[string]int{"PropagationPolicy apps/b": 1, "PropagationPolicy apps/a": 2}}),
			want: metav1.Condition{Status: "False", Reason: "ClaimedByOtherPolicies",
				Message: "every template this policy selects (3) is claimed by another policy: PropagationPolicy apps/a (2), PropagationPolicy apps/b (1)"},
		},
		{
			name: "propagating, some claimed by others", policy: pp,
			e:    fine(evaluation{selected: 3, claimed: 2, others: map[string]int{"ClusterPropagationPolicy all": 1}}),
			want: metav1.Condition{Status: "True", Reason: "Propagating", Message: "propagates 2 templates; other selected templates are claimed by ClusterPropagationPolicy all (1)"},
		},
		{
			name: "a PropagationPolicy naming only a cluster-scoped kind", policy: pp,
			e: fine(evaluation{clusterKinds: []string{"ClusterResourceEnvelope"}}),
			want: metav1.Condition{Status: "False", Reason: "NoMatchingTemplates",
				Message: "no template matches the resourceSelectors; ClusterResourceEnvelope is cluster-scoped, which only a ClusterPropagationPolicy selects"},
		},
		{
			name: "propagating, and naming cluster-scoped kinds besides", policy: pp,
			e: fine(evaluation{selected: 1, claimed: 1, clusterKinds: []string{"ClusterResourceEnvelope", "ClusterRole"}}),
			want: metav1.Condition{Status: "True", Reason: "Propagating",
				Message: "propagates 1 template; ClusterResourceEnvelope, ClusterRole are cluster-scoped, which only a ClusterPropagationPolicy selects"},
		},
		{
			name: "propagating one", policy: pp,
			e:    fine(evaluation{selected: 1, claimed: 1}),
			want: metav1.Condition{Status: "True", Reason: "Propagating", Message: "propagates 1 template"},
		},
		{
			name: "propagating, but clusterNames names a cluster that is not a member", policy: pp,
			e: fine(evaluation{selected: 1, claimed: 1, unknownMembers: "clusterAffinity.clusterNames names nosuch, which is not a member of the fleet"}),
			want: metav1.Condition{Status: "True", Reason: "Propagating",
				Message: "propagates 1 template; clusterAffinity.clusterNames names nosuch, which is not a member of the fleet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.want.Type = "Propagating"
			if diff := cmp.Diff(tt.want, tt.e.condition(tt.policy)); diff != "" {
				t.Errorf("condition (-want +got):\n%s", diff)
			}
		})
	}
}
