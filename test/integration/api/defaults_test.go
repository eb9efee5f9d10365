package api_test

import (
	"context"
	"os"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TestKarmadasDefaultsAreStored applies, through flotilla-manager's
// defaulting webhook, Karmada documents that leave out what Karmada's own
// webhook fills in, and reads the values filled in back from the stored
// object: each document is accepted and means what it means in Karmada.
func TestKarmadasDefaultsAreStored(t *testing.T) {
	ensureNamespace(t, "fleet")
	ctx := context.Background()

	raw, err := os.ReadFile("testdata/karmada/propagationpolicy-defaulted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pp := &policyv1alpha1.PropagationPolicy{}
	if err := yaml.UnmarshalStrict(karmadaToFlotilla(raw), pp); err != nil {
		t.Fatal(err)
	}
	pp.Name = "defaults-stored"
	if err := env.Client.Create(ctx, pp, client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
		t.Fatalf("a Karmada document relying on Karmada's defaults was refused: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), pp) })
	got := &policyv1alpha1.PropagationPolicy{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pp), got); err != nil {
		t.Fatal(err)
	}
	checkDefaulted(t, &got.Spec)

	// The same for a ClusterPropagationPolicy, and the defaults are filled
	// in again when an update takes them out.
	cpp := &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "defaults-stored"}, Spec: *pp.Spec.DeepCopy()}
	cpp.Spec.Placement.SpreadConstraints = []policyv1alpha1.SpreadConstraint{{MaxGroups: 2}}
	cpp.Spec.Placement.ReplicaScheduling.ReplicaDivisionPreference = ""
	cpp.Spec.Failover.Application.GracePeriodSeconds = nil
	if err := env.Client.Create(ctx, cpp); err != nil {
		t.Fatalf("a ClusterPropagationPolicy relying on Karmada's defaults was refused: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cpp) })
	checkDefaulted(t, &cpp.Spec)
	cpp.Spec.Placement.SpreadConstraints[0].SpreadByField = ""
	cpp.Spec.Placement.ReplicaScheduling.ReplicaDivisionPreference = ""
	cpp.Spec.Failover.Application.GracePeriodSeconds = nil
	if err := env.Client.Update(ctx, cpp); err != nil {
		t.Fatalf("an update taking Karmada's defaults out was refused: %v", err)
	}
	checkDefaulted(t, &cpp.Spec)

	// What the user spelled out is kept, including an explicit Aggregated
	// (which, with a weight preference, is still refused as in Karmada's
	// schema: the default applies only to an absent preference).
	explicit := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "defaults-explicit"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: pp.Spec.ResourceSelectors,
			Placement: policyv1alpha1.Placement{
				SpreadConstraints: []policyv1alpha1.SpreadConstraint{{SpreadByLabel: "tier", MinGroups: 2}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated},
			},
			Failover: &policyv1alpha1.FailoverBehavior{Application: &policyv1alpha1.ApplicationFailoverBehavior{
				DecisionConditions: pp.Spec.Failover.Application.DecisionConditions, PurgeMode: policyv1alpha1.PurgeModeDirectly,
			}},
		},
	}
	if err := env.Client.Create(ctx, explicit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), explicit) })
	if c := explicit.Spec.Placement.SpreadConstraints[0]; c.SpreadByLabel != "tier" || c.SpreadByField != "" || c.MinGroups != 2 {
		t.Errorf("a spelled-out spread constraint was changed: %+v", c)
	}
	if p := explicit.Spec.Placement.ReplicaScheduling.ReplicaDivisionPreference; p != policyv1alpha1.ReplicaDivisionPreferenceAggregated {
		t.Errorf("an explicit Aggregated became %q", p)
	}
	if g := explicit.Spec.Failover.Application.GracePeriodSeconds; g != nil {
		t.Errorf("purge mode Directly got a grace period %d", *g)
	}
}

func checkDefaulted(t *testing.T, spec *policyv1alpha1.PropagationSpec) {
	t.Helper()
	if len(spec.Placement.SpreadConstraints) != 1 {
		t.Fatalf("spread constraints: %+v", spec.Placement.SpreadConstraints)
	}
	if c := spec.Placement.SpreadConstraints[0]; c.SpreadByField != policyv1alpha1.SpreadByFieldCluster || c.MinGroups != 1 || c.MaxGroups != 2 {
		t.Errorf("spread constraint stored as %+v, want spreadByField cluster, minGroups 1, maxGroups 2 (Karmada's defaults)", c)
	}
	if p := spec.Placement.ReplicaScheduling.ReplicaDivisionPreference; p != policyv1alpha1.ReplicaDivisionPreferenceWeighted {
		t.Errorf("replicaDivisionPreference stored as %q, want Weighted (Karmada's default for Divided)", p)
	}
	if g := spec.Failover.Application.GracePeriodSeconds; g == nil || *g != 600 {
		t.Errorf("gracePeriodSeconds stored as %v, want 600 (Karmada's default for purgeMode Gracefully)", g)
	}
}
