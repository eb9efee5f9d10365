// Package memberstatus turns what a member shows — its API discovery and
// the capacity ConfigMap flotilla-estimator publishes — into MemberCluster
// status fields. The hub (Push mode, through its scoped identity) and
// flotilla-agent (Pull mode) report a member the same way through it.
package memberstatus

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// APIEnablements lists the top-level resources of each group version,
// sorted by group version and resource name.
func APIEnablements(lists []*metav1.APIResourceList) []clusterv1alpha1.APIEnablement {
	out := make([]clusterv1alpha1.APIEnablement, 0, len(lists))
	for _, l := range lists {
		e := clusterv1alpha1.APIEnablement{GroupVersion: l.GroupVersion}
		for _, res := range l.APIResources {
			if !strings.Contains(res.Name, "/") {
				e.Resources = append(e.Resources, clusterv1alpha1.APIResource{Name: res.Name, Kind: res.Kind})
			}
		}
		slices.SortFunc(e.Resources, func(a, b clusterv1alpha1.APIResource) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b clusterv1alpha1.APIEnablement) int { return strings.Compare(a.GroupVersion, b.GroupVersion) })
	return out
}

// SetCapacity decodes the estimator's ConfigMap data into the status's
// capacity model, node summary and resource summary: all or nothing.
func SetCapacity(st *clusterv1alpha1.MemberClusterStatus, data map[string]string) error {
	model := &clusterv1alpha1.CapacityModel{}
	nodes := &clusterv1alpha1.NodeSummary{}
	resources := &clusterv1alpha1.ResourceSummary{}
	for key, into := range map[string]any{
		clusterv1alpha1.CapacityModelKey:   model,
		clusterv1alpha1.NodeSummaryKey:     nodes,
		clusterv1alpha1.ResourceSummaryKey: resources,
	} {
		raw, ok := data[key]
		if !ok {
			return fmt.Errorf("capacity ConfigMap has no %q key", key)
		}
		if err := json.Unmarshal([]byte(raw), into); err != nil {
			return fmt.Errorf("decode %s of the capacity ConfigMap: %w", key, err)
		}
	}
	st.CapacityModel, st.NodeSummary, st.ResourceSummary = model, nodes, resources
	return nil
}
