package propagation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
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

// TestAnAutoscalerScalingBetweenTheReadAndTheApplyIsNoApplyFailure: the
// member's autoscaler takes the replica count in the moment between the
// applier reading the member's Deployment (still all Flotilla's) and
// applying the template's change over it. The apply's conflict is not
// reported: the applier reads again, leaves the count to the autoscaler and
// applies the rest.
func TestAnAutoscalerScalingBetweenTheReadAndTheApplyIsNoApplyFailure(t *testing.T) {
	const ns = "retain-race"
	web := fleetWeb(ns)
	web.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	raw, err := json.Marshal(web)
	if err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ExecutionNamespace(member1), Name: "retain-race", Generation: 1}}
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	recorder := events.NewFakeRecorder(10)
	a := &applier.Applier{Works: hub.Client, Members: staticMembers{member1: members[member1]}, Recorder: recorder}
	a.Default()
	if _, err := a.Apply(ctx(), member1, w); err != nil || !conditions.IsTrue(w, workv1alpha1.WorkApplied) {
		t.Fatalf("first apply: %v, Applied: %s", err, conditions.GetMessage(w, workv1alpha1.WorkApplied))
	}

	// The template changes; the autoscaler scales to 9 just before
	// Flotilla's first apply of the change reaches the member.
	web.Spec.Template.Spec.Containers[0].Env[0].Value = "raced"
	if raw, err = json.Marshal(web); err != nil {
		t.Fatal(err)
	}
	w.Generation = 2
	w.Spec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}
	direct, err := client.NewWithWatch(memberConfigs[member1], client.Options{Scheme: members[member1].Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	scaled, applies := false, 0
	raced := interceptor.NewClient(direct, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			applies++
			if !scaled {
				scaled = true
				scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}, Spec: autoscalingv1.ScaleSpec{Replicas: 9}}
				if err := c.SubResource("scale").Update(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}},
					client.WithSubResourceBody(scale), client.FieldOwner("horizontal-pod-autoscaler")); err != nil {
					t.Errorf("scale the member's Deployment as its autoscaler: %v", err)
				}
			}
			return c.Apply(ctx, obj, opts...)
		},
	})
	a.Members = staticMembers{member1: raced}
	if _, err := a.Apply(ctx(), member1, w); err != nil {
		t.Fatalf("apply the change: %v", err)
	}
	if !conditions.IsTrue(w, workv1alpha1.WorkApplied) {
		t.Errorf("Applied: %s, want True", conditions.GetMessage(w, workv1alpha1.WorkApplied))
	}
	if applies != 2 {
		t.Errorf("%d applies of the change, want 2 (the one the autoscaler's scale made conflict, and the one without the count)", applies)
	}
	if len(w.Status.ManifestStatuses) != 1 || !strings.Contains(w.Status.ManifestStatuses[0].Message,
		"spec.replicas kept as the member's: owned there by horizontal-pod-autoscaler") {
		t.Errorf("manifestStatuses %s", rawJSON(w.Status.ManifestStatuses))
	}
	select {
	case e := <-recorder.Events:
		t.Errorf("event %q, want none", e)
	default:
	}
	got := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
	if err := inMember(member1, got); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 9 || got.Spec.Template.Spec.Containers[0].Env[0].Value != "raced" {
		t.Errorf("member1's Deployment: replicas %d, MODE %q; want the autoscaler's 9 and the template's \"raced\"",
			*got.Spec.Replicas, got.Spec.Template.Spec.Containers[0].Env[0].Value)
	}
}
