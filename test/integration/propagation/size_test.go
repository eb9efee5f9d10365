package propagation_test

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// TestAWorkOverTheSizeLimitIsReportedWithItsSize: a 1.1 MiB custom
// resource is a valid hub object but too large for a Work beside its
// status; the binding says so with the size and the limit, and nothing is
// written for the member.
func TestAWorkOverTheSizeLimitIsReportedWithItsSize(t *testing.T) {
	const ns = "oversized"
	hubCRD(t, "Blob", "blobs")
	namespace(t, ns, true)
	blob := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Blob",
		"metadata": map[string]any{"name": "big", "namespace": ns},
		"spec":     map[string]any{"data": strings.Repeat("x", binding.MaxWorkManifestBytes+100*1024)},
	}}
	create(t, blob)
	createYAML(t, `apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: blobs, namespace: oversized}
spec:
  resourceSelectors: [{apiVersion: example.com/v1, kind: Blob}]
`)
	rb := bindAndSchedule(t, ns, "big", "Blob", placement(member1, 0))
	eventually(t, "the binding says the Work is too large", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx(), keyOf(rb), b); err != nil {
			return err
		}
		return hasCondition(b, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonWorkTooLarge,
			fmt.Sprintf("over the limit of %d bytes", binding.MaxWorkManifestBytes))
	})
	if _, err := work(rb, member1); err == nil {
		t.Fatal("a Work was written for member1")
	}
}
