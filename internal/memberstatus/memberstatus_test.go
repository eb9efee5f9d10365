package memberstatus

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestAPIEnablementsListTopLevelResourcesSorted(t *testing.T) {
	got := APIEnablements([]*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "pods", Kind: "Pod"}, {Name: "pods/status", Kind: "Pod"}, {Name: "configmaps", Kind: "ConfigMap"}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
	})
	want := []clusterv1alpha1.APIEnablement{
		{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		{GroupVersion: "v1", Resources: []clusterv1alpha1.APIResource{{Name: "configmaps", Kind: "ConfigMap"}, {Name: "pods", Kind: "Pod"}}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("APIEnablements = %v, want %v", got, want)
	}
}

func TestSetCapacityIsAllOrNothing(t *testing.T) {
	complete := map[string]string{
		clusterv1alpha1.CapacityModelKey:   `{"observedTime":"2026-01-02T03:04:05Z","observedPods":7,"nodeGroups":[{"count":2,"free":{"cpu":"3"}}]}`,
		clusterv1alpha1.NodeSummaryKey:     `{"totalNum":2,"readyNum":2}`,
		clusterv1alpha1.ResourceSummaryKey: `{"allocatable":{"cpu":"8"}}`,
	}
	st := &clusterv1alpha1.MemberClusterStatus{}
	if err := SetCapacity(st, complete); err != nil {
		t.Fatal(err)
	}
	if st.CapacityModel.ObservedPods != 7 || st.CapacityModel.NodeGroups[0].Count != 2 || st.NodeSummary.ReadyNum != 2 || st.ResourceSummary.Allocatable.Cpu().String() != "8" {
		t.Errorf("status %+v %+v %+v, want the ConfigMap's model, 2 ready nodes, 8 CPU allocatable", st.CapacityModel, st.NodeSummary, st.ResourceSummary)
	}

	kept := st.DeepCopy()
	broken := map[string]string{clusterv1alpha1.CapacityModelKey: complete[clusterv1alpha1.CapacityModelKey], clusterv1alpha1.NodeSummaryKey: "{not json"}
	if err := SetCapacity(st, broken); err == nil {
		t.Error("SetCapacity accepted a ConfigMap with a malformed node summary and no resource summary")
	}
	if !equality.Semantic.DeepEqual(st, kept) {
		t.Error("a failed SetCapacity changed the status")
	}
}
