package manifests

import (
	"bytes"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

func TestRenderPutsImageVersionAndIntervalIntoTheDeployment(t *testing.T) {
	out, err := Render(Params{Image: "registry.example/flotilla-estimator:v1.2.3", Version: "v1.2.3", PublishInterval: 15 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(out, []byte("\n---\n"))
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict(docs[len(docs)-1], d); err != nil {
		t.Fatalf("last document is not a Deployment: %v", err)
	}
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != "registry.example/flotilla-estimator:v1.2.3" || d.Labels["app.kubernetes.io/version"] != "v1.2.3" {
		t.Errorf("image %q version %q", c.Image, d.Labels["app.kubernetes.io/version"])
	}
	want := []string{"--namespace=flotilla-system", "--configmap=flotilla-capacity-model", "--publish-interval=15s"}
	if strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("args %v, want %v", c.Args, want)
	}
}

func TestRenderRefusesAnEmptyImage(t *testing.T) {
	if _, err := Render(Params{Version: "v1"}); err == nil {
		t.Error("rendered without an image")
	}
}
