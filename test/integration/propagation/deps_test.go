package propagation_test

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestPropagateDepsCarriesTheReferencedConfigMap: with propagateDeps, a
// ConfigMap the Deployment reads follows it to the member, follows its
// changes, and leaves when no longer referenced or with the Deployment.
func TestPropagateDepsCarriesTheReferencedConfigMap(t *testing.T) {
	const ns = "deps"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web-env, namespace: deps}
data: {MODE: a}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: deps}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
        envFrom: [{configMapRef: {name: web-env}}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: deps}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
`)
	rb := bindAndSchedule(t, ns, "web", "Deployment", placement(member1, 1))
	if !rb.Spec.PropagateDeps {
		t.Errorf("binding spec.propagateDeps = false, want the policy's true")
	}
	memberConfigMap := func(want string) func() error {
		return func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-env"}}
			if err := inMember(member1, cm); err != nil {
				return err
			}
			if cm.Data["MODE"] != want || cm.Labels[workv1alpha1.ManagedByLabel] != workv1alpha1.ManagedByValue {
				return fmt.Errorf("data %v labels %v", cm.Data, cm.Labels)
			}
			return nil
		}
	}
	eventually(t, "the ConfigMap in member1 beside the Deployment", memberConfigMap("a"))
	eventually(t, "the Deployment in member1", func() error {
		return inMember(member1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}})
	})

	update(t, hub.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-env"}}, func(cm *corev1.ConfigMap) {
		cm.Data["MODE"] = "b"
	})
	eventually(t, "the ConfigMap's change in member1", memberConfigMap("b"))

	web := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	update(t, hub.Client, web, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].EnvFrom = nil })
	eventually(t, "the ConfigMap gone from member1 once unreferenced", func() error {
		return goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-env"}})
	})
	if err := inMember(member1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
		t.Errorf("the Deployment left member1 with its dependency: %v", err)
	}

	update(t, hub.Client, web, func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-env"}}}}
	})
	eventually(t, "the ConfigMap back in member1", memberConfigMap("b"))
	if err := hub.Client.Delete(ctx(), web); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Deployment and its ConfigMap gone from member1", func() error {
		if err := goneFromMember(member1, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}); err != nil {
			return err
		}
		return goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-env"}})
	})
	if err := hub.Client.Get(ctx(), keyOf(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-env"}}), &corev1.ConfigMap{}); err != nil {
		t.Errorf("the hub's ConfigMap: %v", err)
	}
}
