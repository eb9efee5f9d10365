package propagation_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestABindingFollowsItsTemplatesContentNotItsResourceVersion: the hub's
// own kube-controller-manager writes a Deployment template's status (it
// cannot run it); when the detector next handles the template (here: its
// policy changed without changing the binding), the binding keeps its
// generation and the template version it follows, so that no phase works
// again for nothing. A change members do receive (a label) still makes a
// new generation and reaches them.
func TestABindingFollowsItsTemplatesContentNotItsResourceVersion(t *testing.T) {
	const ns = "content"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: content}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: content}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: web:1}]
`)
	rb := bindAndSchedule(t, ns, "web", "Deployment", placement(member1, 1))
	eventually(t, "the Deployment applied to member1", func() error { return appliedOn(rb, 1) })
	before := rb.DeepCopy()

	tmpl := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
		t.Fatal(err)
	}
	tmpl.Status.ObservedGeneration = tmpl.Generation
	tmpl.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: "True",
		Reason: "FailedCreate", Message: "the hub does not run Deployment web, its members do"}}
	if err := hub.Client.Status().Update(ctx(), tmpl); err != nil {
		t.Fatalf("write the template's status as the hub's controllers do: %v", err)
	}
	update(t, hub.Client, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
		func(p *policyv1alpha1.PropagationPolicy) {
			p.Spec.ResourceSelectors = append(p.Spec.ResourceSelectors, policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap", Name: "nothing"})
		})
	// The detector handles the policy's templates within milliseconds.
	time.Sleep(2 * time.Second)
	if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
		t.Fatal(err)
	}
	if rb.Generation != before.Generation || rb.Spec.Resource.ResourceVersion != before.Spec.Resource.ResourceVersion {
		t.Fatalf("the template's status write made binding generation %d (was %d), following template version %s (was %s)",
			rb.Generation, before.Generation, rb.Spec.Resource.ResourceVersion, before.Spec.Resource.ResourceVersion)
	}

	update(t, hub.Client, tmpl, func(d *appsv1.Deployment) { d.Labels = map[string]string{"tier": "front"} })
	eventually(t, "a new binding generation following the label, and the label in member1", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		if rb.Generation == before.Generation || rb.Spec.Resource.ResourceVersion == before.Spec.Resource.ResourceVersion {
			return fmt.Errorf("binding generation %d, template version %s", rb.Generation, rb.Spec.Resource.ResourceVersion)
		}
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
		if err := inMember(member1, d); err != nil {
			return err
		}
		if d.Labels["tier"] != "front" {
			return fmt.Errorf("labels in member1 %v", d.Labels)
		}
		return nil
	})
	if rb.Annotations[workv1alpha1.TemplateContentAnnotation] == before.Annotations[workv1alpha1.TemplateContentAnnotation] {
		t.Errorf("the template's content hash did not change with its label: %s", rb.Annotations[workv1alpha1.TemplateContentAnnotation])
	}
}

// TestATemplatesAnnotationReachesItsMembers: a StatefulSet does not count
// an annotation change as a new generation; the detector still follows it,
// the binding takes the new content and the member receives the
// annotation.
func TestATemplatesAnnotationReachesItsMembers(t *testing.T) {
	const ns = "annotated"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: db, namespace: annotated}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: StatefulSet, name: db}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: annotated}
spec:
  replicas: 1
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: db, image: db:1}]
`)
	rb := bindAndSchedule(t, ns, "db", "StatefulSet", placement(member1, 1))
	eventually(t, "the StatefulSet applied to member1", func() error { return appliedOn(rb, 1) })

	tmpl := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
	update(t, hub.Client, tmpl, func(s *appsv1.StatefulSet) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations["backup.example.com/schedule"] = "nightly"
	})
	eventually(t, "the annotation in member1", func() error {
		s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
		if err := inMember(member1, s); err != nil {
			return err
		}
		if s.Annotations["backup.example.com/schedule"] != "nightly" {
			return fmt.Errorf("annotations in member1 %v", s.Annotations)
		}
		return nil
	})
}
