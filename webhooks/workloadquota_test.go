package webhooks

import (
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func render(l corev1.ResourceList) string {
	var parts []string
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func TestQuotaRequestIsTheTemplatesUsageLessWhatItsBindingUsesNow(t *testing.T) {
	web := &unstructured.Unstructured{}
	web.SetAPIVersion("apps/v1")
	web.SetKind("Deployment")
	web.SetNamespace("tenant")
	web.SetName("web")
	cpu := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	placed := func(name, kind string, placement *policyv1alpha1.Placement, clusters ...workv1alpha1.TargetCluster) workv1alpha1.ResourceBinding {
		return workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: name + "-" + strings.ToLower(kind)},
			Spec: workv1alpha1.ResourceBindingSpec{
				Resource:            workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: kind, Namespace: "tenant", Name: name},
				ReplicaRequirements: cpu, Placement: placement, Clusters: clusters,
			},
		}
	}
	duplicated := &policyv1alpha1.Placement{ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated}}
	cases := []struct {
		name     string
		bindings []workv1alpha1.ResourceBinding
		want     string
	}{
		{
			name: "a new template asks for all its replicas",
			want: "count/deployments.apps=1 cpu=5 pods=5 requests.cpu=5",
		},
		{
			name:     "a placed template asks for the difference; other templates' bindings do not count as its own",
			bindings: []workv1alpha1.ResourceBinding{placed("web", "Deployment", nil, workv1alpha1.TargetCluster{Name: "m1", Replicas: 3}), placed("web", "StatefulSet", nil, workv1alpha1.TargetCluster{Name: "m1", Replicas: 3})},
			want:     "cpu=2 pods=2 requests.cpu=2",
		},
		{
			name:     "a Duplicated template asks for its replicas on every member it is on",
			bindings: []workv1alpha1.ResourceBinding{placed("web", "Deployment", duplicated, workv1alpha1.TargetCluster{Name: "m1", Replicas: 3}, workv1alpha1.TargetCluster{Name: "m2", Replicas: 3})},
			want:     "cpu=4 pods=4 requests.cpu=4",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(QuotaRequest(web, 5, cpu, tc.bindings)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}
