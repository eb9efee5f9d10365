package webhooks

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

func TestOverrideRulesNamingNonMembersAreWarnedOfNotRefused(t *testing.T) {
	members := fake.NewClientBuilder().WithScheme(hubscheme.New()).WithObjects(
		&clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "member1"}},
	).Build()
	op := &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"member1"}}},
			{TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nosuch"}}},
		}},
	}
	warnings, err := (&OverridePolicy{Members: members}).ValidateCreate(context.Background(), op)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"overrideRules[1].targetCluster.clusterNames names nosuch, which is not a member of the fleet"}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q, want %q", warnings, want)
	}

	cop := &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: "all"}, Spec: op.Spec}
	cop.Spec.OverrideRules = cop.Spec.OverrideRules[:1]
	if warnings, err := (&ClusterOverridePolicy{Members: members}).ValidateUpdate(context.Background(), cop, cop); err != nil || len(warnings) != 0 {
		t.Errorf("a rule naming members only: warnings %q, err %v", warnings, err)
	}
}
