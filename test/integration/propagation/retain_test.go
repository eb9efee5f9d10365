package propagation_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestAReplicaCountAnAutoscalerOwnsInTheMemberStaysTheMembers: a
// HorizontalPodAutoscaler in a member scales the Deployment Flotilla put
// there (through the scale subresource, as the HPA controller does). The
// member's count stays: the next applies — a template change, under Abort
// and then Overwrite — neither fail with a conflict nor set the count back,
// while the rest of the template still reaches the member.
func TestAReplicaCountAnAutoscalerOwnsInTheMemberStaysTheMembers(t *testing.T) {
	const ns = "retain"
	// Marked for takeover, so that the policy's Overwrite is honoured.
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		policyv1alpha1.FederatedLabel: "true", policyv1alpha1.AllowOverwriteLabel: "true"}}})
	web := fleetWeb(ns)
	create(t, web)
	create(t, duplicatedTo(ns, "fleet-web", []string{member1}, deploymentSelector("fleet-web")))
	rb := bindAndSchedule(t, ns, "fleet-web", "Deployment", placement(member1, 6))

	inMemberWeb := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
	eventually(t, "the Deployment in member1 with the template's 6 replicas", func() error {
		if err := inMember(member1, inMemberWeb); err != nil {
			return err
		}
		if r := inMemberWeb.Spec.Replicas; r == nil || *r != 6 {
			return fmt.Errorf("replicas %v", r)
		}
		return nil
	})

	// The member's autoscaler scales to 9.
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}}
	if err := members[member1].SubResource("scale").Update(ctx(), inMemberWeb, client.WithSubResourceBody(scale),
		client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
		t.Fatalf("scale the member's Deployment as its autoscaler: %v", err)
	}

	for _, mode := range []policyv1alpha1.ConflictResolution{policyv1alpha1.ConflictAbort, policyv1alpha1.ConflictOverwrite} {
		update(t, hub.Client, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}},
			func(p *policyv1alpha1.PropagationPolicy) { p.Spec.ConflictResolution = mode })
		mark := "v-" + strings.ToLower(string(mode))
		update(t, hub.Client, web, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Env[0].Value = mark })

		eventually(t, string(mode)+": the template change in member1, its replica count still the autoscaler's 9", func() error {
			if err := inMember(member1, inMemberWeb); err != nil {
				return err
			}
			if env := inMemberWeb.Spec.Template.Spec.Containers[0].Env[0].Value; env != mark {
				return fmt.Errorf("env %q, want %q", env, mark)
			}
			if r := inMemberWeb.Spec.Replicas; r == nil || *r != 9 {
				t.Fatalf("%s: member1's replicas set back to %v over its autoscaler's 9", mode, *r)
			}
			return nil
		})
		eventually(t, string(mode)+": the Work applied, saying whose the replica count is", func() error {
			w, err := work(rb, member1)
			if err != nil {
				return err
			}
			if c := conditions.Get(w, workv1alpha1.WorkApplied); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != w.Generation {
				return fmt.Errorf("Applied %+v", c)
			}
			if len(w.Status.ManifestStatuses) != 1 || !strings.Contains(w.Status.ManifestStatuses[0].Message,
				"spec.replicas kept as the member's: owned there by horizontal-pod-autoscaler") {
				return fmt.Errorf("manifestStatuses %s", rawJSON(w.Status.ManifestStatuses))
			}
			return nil
		})
	}
	if err := inMember(member1, inMemberWeb); err != nil || *inMemberWeb.Spec.Replicas != 9 {
		t.Fatalf("member1's replicas %v (err %v), want the autoscaler's 9", *inMemberWeb.Spec.Replicas, err)
	}
}
