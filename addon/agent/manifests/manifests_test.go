package manifests

import (
	"bytes"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestRenderNamesTheMemberAndMountsTheHubCredentials(t *testing.T) {
	out, err := Render(Params{Member: "eu-1", Image: "registry.example/flotilla-agent:v1", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(out, []byte("\n---\n"))
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(docs[len(docs)-1], d); err != nil {
		t.Fatalf("last document is not a Deployment: %v", err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example/flotilla-agent:v1" || !slices.Contains(c.Args, "--member=eu-1") || !slices.Contains(c.Args, "--hub-kubeconfig=/etc/flotilla/hub/kubeconfig") {
		t.Errorf("image %q args %v", c.Image, c.Args)
	}
	if v := d.Spec.Template.Spec.Volumes; len(v) != 1 || v[0].Secret == nil || v[0].Secret.SecretName != HubSecret {
		t.Errorf("volumes %+v, want the Secret %s", v, HubSecret)
	}
	// The kubeconfig the agent is told to read is the one the Secret volume holds.
	if m := c.VolumeMounts; len(m) != 1 || m[0].Name != d.Spec.Template.Spec.Volumes[0].Name || m[0].MountPath+"/"+KubeconfigKey != "/etc/flotilla/hub/kubeconfig" {
		t.Errorf("volume mounts %+v, want the hub Secret at /etc/flotilla/hub", m)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "POD_NAME" || c.Env[0].ValueFrom == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("env %+v, want POD_NAME from metadata.name (the Lease holder)", c.Env)
	}
}

func TestRenderHubCredentialsCarriesTheKubeconfigVerbatim(t *testing.T) {
	kubeconfig := []byte("apiVersion: v1\nkind: Config\n# any bytes: 'quotes' \"and\" newlines\n")
	out, err := RenderHubCredentials("eu-1", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{}
	if err := yaml.UnmarshalStrict(out, s); err != nil {
		t.Fatal(err)
	}
	if s.Namespace != "flotilla-system" || s.Name != HubSecret || !bytes.Equal(s.Data[KubeconfigKey], kubeconfig) {
		t.Errorf("Secret %s/%s data %q, want flotilla-system/%s with the kubeconfig", s.Namespace, s.Name, s.Data[KubeconfigKey], HubSecret)
	}
}
