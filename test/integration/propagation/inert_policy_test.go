package propagation_test

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/test/testenv"
)

// TestTheHubsControllersCannotRunTemplates installs the release's
// flotilla-inert-templates admission policy (config/admission) on the hub
// and plays the hub's kube-controller-manager: in a federated namespace it
// may not create a ReplicaSet for a Deployment, a Job for a CronJob, or a
// Pod at all, and the refusal says why; the user's own ReplicaSet and Job
// (templates) are admitted, and so is all of it in a namespace that is not
// federated.
func TestTheHubsControllersCannotRunTemplates(t *testing.T) {
	installHubPolicy(t, "inert_workloads.yaml")
	const fed, plain = "inert-policy", "not-federated"
	namespace(t, fed, true)
	namespace(t, plain, false)

	controlledBy := func(apiVersion, kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID("uid-" + name), Controller: ptr.To(true)}}
	}
	podSpec := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}},
	}
	replicaSet := func(ns, name string, owners []metav1.OwnerReference) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners},
			Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, Template: podSpec},
		}
	}
	job := func(ns, name string, owners []metav1.OwnerReference) *batchv1.Job {
		spec := *podSpec.DeepCopy()
		spec.Spec.RestartPolicy = corev1.RestartPolicyNever
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners}, Spec: batchv1.JobSpec{Template: spec}}
	}
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: podSpec.Spec}
	}
	const byPolicy = "ValidatingAdmissionPolicy 'flotilla-inert-templates'"

	// The policy is in force once the first refusal comes.
	eventually(t, "the policy in force", func() error {
		err := hub.Client.Create(ctx(), replicaSet(fed, "web-7d4b9c", controlledBy("apps/v1", "Deployment", "web")))
		if err == nil {
			return errors.New("the Deployment's ReplicaSet was admitted")
		}
		if !strings.Contains(err.Error(), byPolicy) || !strings.Contains(err.Error(), "the hub does not run Deployment web, its members do") {
			return err
		}
		return nil
	})

	refused := []struct {
		what string
		obj  client.Object
		says string
	}{
		{"a CronJob's Job", job(fed, "nightly-29000000", controlledBy("batch/v1", "CronJob", "nightly")), "the hub does not run CronJob nightly, its members do"},
		{"a ReplicaSet's Pod", pod(fed, "web-7d4b9c-x2k8d"), "Pods are not admitted here"},
		{"a Pod of the user's", pod(fed, "by-hand"), "Pods are not admitted here"},
	}
	for _, r := range refused {
		err := hub.Client.Create(ctx(), r.obj)
		if err == nil || !strings.Contains(err.Error(), byPolicy) || !strings.Contains(err.Error(), r.says) ||
			!strings.Contains(err.Error(), "namespace "+fed+" is federated") {
			t.Errorf("%s in a federated namespace: %v, want refused by %s saying %q", r.what, err, byPolicy, r.says)
		}
	}

	admitted := []struct {
		what string
		obj  client.Object
	}{
		{"the user's ReplicaSet template", replicaSet(fed, "mine", nil)},
		{"the user's Job template", job(fed, "once", nil)},
		{"a ReplicaSet owned, not controlled, by a Deployment", replicaSet(fed, "adopted", []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", UID: "uid-web"}})},
		{"a Deployment's ReplicaSet elsewhere", replicaSet(plain, "web-7d4b9c", controlledBy("apps/v1", "Deployment", "web"))},
		{"a CronJob's Job elsewhere", job(plain, "nightly-29000000", controlledBy("batch/v1", "CronJob", "nightly"))},
		{"a Pod elsewhere", pod(plain, "runs")},
	}
	for _, a := range admitted {
		if err := hub.Client.Create(ctx(), a.obj); err != nil {
			t.Errorf("%s: %v, want admitted", a.what, err)
		}
	}
}

// installHubPolicy installs on the hub the admission policy and binding of
// a file of config/admission, as the release does, and removes them when
// the test ends.
func installHubPolicy(t *testing.T, file string) {
	t.Helper()
	created, err := testenv.InstallAdmissionPolicies(ctx(), hub.Client, file)
	for _, obj := range created {
		t.Cleanup(func() { _ = hub.Client.Delete(ctx(), obj) })
	}
	if err != nil {
		t.Fatal(err)
	}
}
