// Package templates holds clusterctl cluster templates that opt into
// Flotilla. The tests render each template the way `clusterctl generate
// cluster --from <template>` does, through clusterctl's own library.
package templates_test

import (
	"context"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const flotillaTemplate = "cluster-template-flotilla.yaml"

// generate renders a template as `clusterctl generate cluster <name> --from
// <file> --target-namespace fleet --kubernetes-version v1.36.3
// --control-plane-machine-count 1 --worker-machine-count 2` with the given
// clusterctl variables (an in-memory configuration: neither the user's
// clusterctl.yaml nor the environment leak in).
func generate(t *testing.T, file string, variables map[string]string) clusterctl.Template {
	t.Helper()
	ctx := context.Background()
	reader := config.NewMemoryReader()
	for k, v := range variables {
		reader.Set(k, v)
	}
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		t.Fatal(err)
	}
	c, err := clusterctl.New(ctx, "", clusterctl.InjectConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	path, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := c.GetClusterTemplate(ctx, clusterctl.GetClusterTemplateOptions{
		URLSource:                &clusterctl.URLSourceOptions{URL: path},
		ClusterName:              "fleet-a",
		TargetNamespace:          "fleet",
		KubernetesVersion:        "v1.36.3",
		ControlPlaneMachineCount: ptr.To[int64](1),
		WorkerMachineCount:       ptr.To[int64](2),
	})
	if err != nil {
		t.Fatalf("clusterctl generate cluster --from %s: %v", file, err)
	}
	return tmpl
}

func find(t *testing.T, objs []unstructured.Unstructured, kind, name string) unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("the template has no %s %s", kind, name)
	return unstructured.Unstructured{}
}

func TestFlotillaFlavorOptsTheClusterInWithItsRegionAndZone(t *testing.T) {
	tmpl := generate(t, flotillaTemplate, map[string]string{"FLOTILLA_REGION": "eu-west", "FLOTILLA_ZONE": "eu-west-b"})
	cluster := find(t, tmpl.Objs(), "Cluster", "fleet-a")
	want := map[string]string{
		clusterv1alpha1.EnrolLabel:      "true",
		"topology.kubernetes.io/region": "eu-west",
		"topology.kubernetes.io/zone":   "eu-west-b",
	}
	for k, v := range want {
		if got := cluster.GetLabels()[k]; got != v {
			t.Errorf("Cluster label %s = %q, want %q", k, got, v)
		}
	}
}

func TestFlotillaFlavorDefaultsRegionAndZone(t *testing.T) {
	tmpl := generate(t, flotillaTemplate, nil)
	cluster := find(t, tmpl.Objs(), "Cluster", "fleet-a")
	labels := cluster.GetLabels()
	for _, k := range []string{"topology.kubernetes.io/region", "topology.kubernetes.io/zone"} {
		v, ok := labels[k]
		if !ok || v == "" {
			t.Errorf("Cluster label %s is missing without FLOTILLA_REGION/FLOTILLA_ZONE", k)
			continue
		}
		if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
			t.Errorf("Cluster label %s=%q is not a label value: %v", k, v, errs)
		}
	}
}

// The variables a user sees with `clusterctl generate cluster --list-variables`:
// the ones clusterctl sets from its flags, and Flotilla's with defaults.
func TestFlotillaFlavorVariables(t *testing.T) {
	tmpl := generate(t, flotillaTemplate, nil)
	got := tmpl.Variables()
	sort.Strings(got)
	want := []string{
		"CAPD_LB_IMAGE_REPOSITORY", "CAPD_LB_IMAGE_TAG", "CAPD_NODE_IMAGE",
		"CLUSTER_NAME", "CONTROL_PLANE_MACHINE_COUNT", "FLOTILLA_REGION", "FLOTILLA_ZONE",
		"KUBEADM_IGNORE_PREFLIGHT_ERRORS", "KUBERNETES_VERSION", "NAMESPACE", "POD_CIDR", "SERVICE_CIDR", "WORKER_MACHINE_COUNT",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("variables = %v, want %v", got, want)
	}
	if yaml, err := tmpl.Yaml(); err != nil {
		t.Fatal(err)
	} else if n := countVariables(string(yaml)); n > 0 {
		t.Errorf("%d ${...} left after rendering", n)
	}
}

// Every reference resolves to an object of the template, in the target
// namespace, with the counts clusterctl was given.
func TestFlotillaFlavorIsOneConsistentCluster(t *testing.T) {
	tmpl := generate(t, flotillaTemplate, nil)
	objs := tmpl.Objs()
	for _, o := range objs {
		if o.GetNamespace() != "fleet" {
			t.Errorf("%s %s is in namespace %q, want the target namespace fleet", o.GetKind(), o.GetName(), o.GetNamespace())
		}
	}
	refs := []struct {
		kind, name string
		path       []string
	}{
		{"Cluster", "fleet-a", []string{"spec", "infrastructureRef"}},
		{"Cluster", "fleet-a", []string{"spec", "controlPlaneRef"}},
		{"KubeadmControlPlane", "fleet-a-control-plane", []string{"spec", "machineTemplate", "spec", "infrastructureRef"}},
		{"MachineDeployment", "fleet-a-md-0", []string{"spec", "template", "spec", "infrastructureRef"}},
		{"MachineDeployment", "fleet-a-md-0", []string{"spec", "template", "spec", "bootstrap", "configRef"}},
	}
	for _, r := range refs {
		o := find(t, objs, r.kind, r.name)
		ref, ok, err := unstructured.NestedStringMap(o.Object, r.path...)
		if err != nil || !ok {
			t.Errorf("%s %s has no %v", r.kind, r.name, r.path)
			continue
		}
		target := find(t, objs, ref["kind"], ref["name"])
		if group := target.GroupVersionKind().Group; group != ref["apiGroup"] {
			t.Errorf("%s %s %v names apiGroup %q, the object's group is %q", r.kind, r.name, r.path, ref["apiGroup"], group)
		}
	}
	for _, c := range []struct {
		kind, name string
		path       []string
		want       int64
	}{
		{"KubeadmControlPlane", "fleet-a-control-plane", []string{"spec", "replicas"}, 1},
		{"MachineDeployment", "fleet-a-md-0", []string{"spec", "replicas"}, 2},
	} {
		// A number, not a string: clusterctl substitutes the text.
		got, _, _ := unstructured.NestedFieldNoCopy(find(t, objs, c.kind, c.name).Object, c.path...)
		if n, ok := got.(float64); !ok || n != float64(c.want) {
			if n, ok := got.(int64); !ok || n != c.want {
				t.Errorf("%s %s %v = %#v, want the number %d", c.kind, c.name, c.path, got, c.want)
			}
		}
	}
	md := find(t, objs, "MachineDeployment", "fleet-a-md-0")
	if got, _, _ := unstructured.NestedString(md.Object, "spec", "clusterName"); got != "fleet-a" {
		t.Errorf("MachineDeployment clusterName = %q, want fleet-a", got)
	}
}

func countVariables(s string) int {
	n := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '$' && s[i+1] == '{' {
			n++
		}
	}
	return n
}
