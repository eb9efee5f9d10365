package propagation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

const waitTimeout = 20 * time.Second

func ctx() context.Context { return context.Background() }

// eventually retries f until it returns nil or the timeout passes.
func eventually(t testing.TB, what string, f func() error) {
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

// namespace creates a hub namespace, federated or not, removed after the test.
func namespace(t testing.TB, name string, federated bool) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if federated {
		ns.Labels = map[string]string{policyv1alpha1.FederatedLabel: "true"}
	}
	create(t, ns)
}

// create creates a hub object.
func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := hub.Client.Create(ctx(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
}

// createYAML creates the hub objects of a multi-document manifest.
func createYAML(t testing.TB, manifests string) {
	t.Helper()
	for _, doc := range strings.Split(manifests, "\n---\n") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		create(t, decode(t, doc))
	}
}

// decode reads a manifest as objects read from the API are: numbers as int64.
func decode(t testing.TB, manifest string) *unstructured.Unstructured {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(manifest))
	if err != nil {
		t.Fatalf("manifest: %v", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	return u
}

// update applies change to a fresh copy of obj until it is written.
func update[T client.Object](t testing.TB, c client.Client, obj T, change func(T)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return c.Update(ctx(), obj)
	})
	if err != nil {
		t.Fatalf("update %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
	}
}

// placement is a spec.clusters list: member name and replicas, in pairs.
func placement(pairs ...any) []workv1alpha1.TargetCluster {
	var out []workv1alpha1.TargetCluster
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, workv1alpha1.TargetCluster{Name: pairs[i].(string), Replicas: int32(pairs[i+1].(int))})
	}
	return out
}

// waitForBinding waits for the ResourceBinding of a template and returns it.
func waitForBinding(t testing.TB, namespace, templateName, kind string) *workv1alpha1.ResourceBinding {
	t.Helper()
	rb := &workv1alpha1.ResourceBinding{}
	key := client.ObjectKey{Namespace: namespace, Name: templateName + "-" + strings.ToLower(kind)}
	eventually(t, "the binding "+key.String(), func() error { return hub.Client.Get(ctx(), key, rb) })
	return rb
}

// schedule writes a binding's spec.clusters, as the scheduler would.
func schedule(t testing.TB, rb *workv1alpha1.ResourceBinding, clusters []workv1alpha1.TargetCluster) {
	t.Helper()
	update(t, hub.Client, rb, func(b *workv1alpha1.ResourceBinding) { b.Spec.Clusters = clusters })
}

// bindAndSchedule waits for a template's binding and schedules it.
func bindAndSchedule(t testing.TB, namespace, templateName, kind string, clusters []workv1alpha1.TargetCluster) *workv1alpha1.ResourceBinding {
	t.Helper()
	rb := waitForBinding(t, namespace, templateName, kind)
	schedule(t, rb, clusters)
	return rb
}

// inMember reads an object from a member into obj.
func inMember(member string, obj client.Object) error {
	return members[member].Get(ctx(), client.ObjectKeyFromObject(obj), obj)
}

// goneFromMember returns nil once obj does not exist in the member.
func goneFromMember(member string, obj client.Object) error {
	err := inMember(member, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%T %s still exists in %s", obj, client.ObjectKeyFromObject(obj), member)
}

// work reads the Work of a ResourceBinding on member.
func work(rb *workv1alpha1.ResourceBinding, member string) (*workv1alpha1.Work, error) {
	w := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: binding.WorkName(binding.KindResourceBinding, rb.Namespace, rb.Name)}
	return w, hub.Client.Get(ctx(), key, w)
}

// hasCondition returns nil when obj has a condition of the type with the
// status, reason and a message containing message.
func hasCondition(obj conditions.Getter, condType string, status metav1.ConditionStatus, reason, message string) error {
	c := conditions.Get(obj, condType)
	switch {
	case c == nil:
		return fmt.Errorf("no %s condition", condType)
	case c.Status != status || c.Reason != reason || !strings.Contains(c.Message, message):
		return fmt.Errorf("%s is %s/%s %q, want %s/%s containing %q", condType, c.Status, c.Reason, c.Message, status, reason, message)
	}
	return nil
}

// eventOn returns nil once the hub has an event with the reason about the
// named object, whose note contains note.
func eventOn(namespace, name, reason, note string) error {
	list := &eventsv1.EventList{}
	if err := hub.Client.List(ctx(), list, client.InNamespace(namespace)); err != nil {
		return err
	}
	var seen []string
	for _, e := range list.Items {
		if e.Regarding.Name != name {
			continue
		}
		if e.Reason == reason && strings.Contains(e.Note, note) {
			return nil
		}
		seen = append(seen, e.Reason+": "+e.Note)
	}
	return fmt.Errorf("no %s event on %s/%s with %q; seen %v", reason, namespace, name, note, seen)
}

// containerEnv is the value of a container's first env var in a Deployment.
func containerEnv(d map[string]any) string {
	containers, _, _ := unstructured.NestedSlice(d, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		return ""
	}
	env, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "env")
	if len(env) == 0 {
		return ""
	}
	v, _ := env[0].(map[string]any)["value"].(string)
	return v
}

// rawJSON renders a value for messages.
func rawJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func keyOf(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }

// hubCRD installs on the hub only a namespaced example.com/v1 kind that
// keeps any field, and waits until it is established.
func hubCRD(t *testing.T, kind, plural string) {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	create(t, crd)
	eventually(t, "the "+kind+" CRD established", func() error {
		if err := hub.Client.Get(ctx(), keyOf(crd), crd); err != nil {
			return err
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("not established")
	})
}
