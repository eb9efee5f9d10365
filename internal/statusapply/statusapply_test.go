package statusapply_test

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/flotilla-io/flotilla/internal/statusapply"
)

// What is sent: the status fields alone, zeros kept, on the object named,
// locked on the version given, as the manager, taking fields over.
func TestApplySendsTheOwnedFieldsAloneLockedAsTheManager(t *testing.T) {
	var sent map[string]any
	var opts client.SubResourceApplyOptions
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, sub string, obj runtime.ApplyConfiguration, o ...client.SubResourceApplyOption) error {
			if sub != "status" {
				t.Errorf("applied to subresource %q, want status", sub)
			}
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &sent); err != nil {
				return err
			}
			opts.ApplyOpts(o)
			return nil
		},
	})
	fields := struct {
		Replicas int32    `json:"replicas"`
		Items    []string `json:"items"`
	}{Replicas: 0, Items: []string{}}
	gvk := schema.GroupVersionKind{Group: "work.flotilla.io", Version: "v1alpha1", Kind: "ResourceBinding"}
	if err := statusapply.Apply(context.Background(), c, gvk, client.ObjectKey{Namespace: "ns", Name: "b"}, "42", "flotilla-test", fields); err != nil {
		t.Fatal(err)
	}
	meta, _ := sent["metadata"].(map[string]any)
	status, _ := sent["status"].(map[string]any)
	switch {
	case sent["apiVersion"] != "work.flotilla.io/v1alpha1" || sent["kind"] != "ResourceBinding":
		t.Errorf("sent %v %v", sent["apiVersion"], sent["kind"])
	case meta["namespace"] != "ns" || meta["name"] != "b" || meta["resourceVersion"] != "42":
		t.Errorf("sent metadata %v", meta)
	case len(sent) != 4:
		t.Errorf("sent more than apiVersion, kind, metadata and status: %v", sent)
	case status["replicas"] != float64(0) || status["items"] == nil:
		t.Errorf("zeros must be sent, not left out: status %v", status)
	}
	if opts.FieldManager != "flotilla-test" || opts.Force == nil || !*opts.Force {
		t.Errorf("field manager %q, force %v", opts.FieldManager, opts.Force)
	}
}
