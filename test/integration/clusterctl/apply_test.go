package clusterctl_test

import (
	"errors"
	"os"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// renderDefaults substitutes every clusterctl variable of a file with its
// default, as clusterctl does when the user sets none.
func renderDefaults(t *testing.T, path string) []unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	notSet := func(string) (string, error) { return "", errors.New("not set") }
	rendered, err := yamlprocessor.NewSimpleProcessor().Process(raw, notSet)
	if err != nil {
		t.Fatalf("%s does not render with its defaults: %v", path, err)
	}
	objs, err := utilyaml.ToUnstructured(rendered)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// apply server-side applies objects, as `kubectl apply --server-side` does.
func (a *apiserver) apply(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for i := range objs {
		o := objs[i].DeepCopy()
		if err := a.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("flotilla-test"), client.ForceOwnership); err != nil {
			t.Errorf("apply %s: %v", kindName(o), err)
		}
	}
}

// Every object of addon-components.yaml, its variables at their defaults,
// applies to a hub that has nothing installed but cert-manager's kinds:
// a manifest the apiserver refuses fails here rather than in a user's
// `clusterctl init`. Applying it again (an upgrade in place) changes nothing
// that fails.
func TestAddonComponentsApplyToAnEmptyHub(t *testing.T) {
	api := startAPIServer(t)
	api.installCRDs(t, certManagerStandIns())
	a := writeRelease(t, "ghcr.io/flotilla-io", "dev")
	objs := renderDefaults(t, a.Components)

	// Namespace and CRDs first: the rest lives in the one and is of the
	// kinds of the other.
	var first, rest []unstructured.Unstructured
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace", "CustomResourceDefinition":
			first = append(first, o)
		default:
			rest = append(rest, o)
		}
	}
	api.apply(t, first)
	ctx := ctxFor(t, time.Minute)
	for _, o := range first {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		waitEstablished(t, api, o.GetName())
	}
	api.apply(t, rest)
	api.apply(t, objs)

	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		if err := api.client.Get(ctx, client.ObjectKeyFromObject(&o), got); err != nil {
			t.Errorf("%s is not on the hub after apply: %v", kindName(&o), err)
		}
	}
}

func waitEstablished(t *testing.T, api *apiserver, name string) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	for {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		err := api.client.Get(ctx, client.ObjectKey{Name: name}, crd)
		if err == nil {
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CRD %s not Established: %v %+v", name, err, crd.Status.Conditions)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
