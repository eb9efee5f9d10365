package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

const waitTimeout = 20 * time.Second

func ctx() context.Context { return context.Background() }

// eventually retries f until it returns nil or the timeout passes.
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %v", waitTimeout, what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consistently checks that f keeps returning nil for the duration.
func consistently(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func resourceMust(q string) resource.Quantity { return resource.MustParse(q) }

// manifest is a Work manifest of an object given as a map.
func manifest(t *testing.T, obj map[string]any) workv1alpha1.Manifest {
	t.Helper()
	raw, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}}
}

func configMap(namespace, name, value string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": namespace, "name": name}, "data": map[string]any{"value": value}}
}

func deployment(namespace, name string, replicas int) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": namespace, "name": name},
		"spec": map[string]any{"replicas": replicas, "selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "registry.k8s.io/pause:3.10"}}}}}}
}

// createWork writes a Work into a member's execution namespace, as the
// binding controller would, and deletes it after the test.
func createWork(t *testing.T, member, name string, manifests ...workv1alpha1.Manifest) *workv1alpha1.Work {
	t.Helper()
	w := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: name},
		Spec:       workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: manifests}},
	}
	if err := hub.Client.Create(ctx(), w); err != nil {
		t.Fatalf("create Work %s: %v", name, err)
	}
	t.Cleanup(func() { _ = hub.Client.Delete(context.Background(), w) })
	return w
}

// updateWork changes a Work's manifests.
func updateWork(t *testing.T, w *workv1alpha1.Work, manifests ...workv1alpha1.Manifest) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		w.Spec.Workload.Manifests = manifests
		return hub.Client.Update(ctx(), w)
	})
	if err != nil {
		t.Fatalf("update Work %s: %v", w.Name, err)
	}
}

// conditionIs returns nil once the hub's copy of obj has the condition
// with that status and reason.
func conditionIs(obj client.Object, condType string, status metav1.ConditionStatus, reason string) error {
	if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
		return err
	}
	c := conditions.Get(obj.(conditions.Getter), condType)
	if c == nil || c.Status != status || c.Reason != reason {
		return fmt.Errorf("%s = %+v, want %s/%s", condType, c, status, reason)
	}
	return nil
}

// memberConfigMapValue reads a ConfigMap's "value" in the member.
func memberConfigMapValue(namespace, name string) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := memberAdmin.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: name}, cm); err != nil {
		return "", err
	}
	return cm.Data["value"], nil
}

// valueIs returns nil once the member's ConfigMap holds value.
func valueIs(namespace, name, value string) func() error {
	return func() error {
		got, err := memberConfigMapValue(namespace, name)
		if err != nil {
			return err
		}
		if got != value {
			return fmt.Errorf("value %q, want %q", got, value)
		}
		return nil
	}
}

// goneFromMember returns nil once obj does not exist in the member.
func goneFromMember(obj client.Object) func() error {
	return func() error {
		err := memberAdmin.Get(ctx(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return fmt.Errorf("%T %s still in the member", obj, client.ObjectKeyFromObject(obj))
	}
}

// fieldManagers lists an object's managed-fields entries as manager/operation.
func fieldManagers(obj metav1.Object) string {
	var out []string
	for _, f := range obj.GetManagedFields() {
		out = append(out, f.Manager+"/"+string(f.Operation))
	}
	return strings.Join(out, ",")
}

func configMapPath(namespace, name string) string {
	return "/api/v1/namespaces/" + namespace + "/configmaps/" + name
}
