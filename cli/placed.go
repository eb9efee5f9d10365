package cli

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// placedOn counts the bindings placed on a member or still holding a copy
// there (graceful eviction tasks).
func placedOn(ctx context.Context, c client.Client, member string) (int, error) {
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := c.List(ctx, rbs); err != nil {
		return 0, fmt.Errorf("list ResourceBindings: %w", err)
	}
	crbs := &workv1alpha1.ClusterResourceBindingList{}
	if err := c.List(ctx, crbs); err != nil {
		return 0, fmt.Errorf("list ClusterResourceBindings: %w", err)
	}
	n := 0
	count := func(spec *workv1alpha1.ResourceBindingSpec) {
		for _, t := range spec.Clusters {
			if t.Name == member {
				n++
				return
			}
		}
		for _, t := range spec.GracefulEvictionTasks {
			if t.FromCluster == member {
				n++
				return
			}
		}
	}
	for i := range rbs.Items {
		count(&rbs.Items[i].Spec)
	}
	for i := range crbs.Items {
		count(&crbs.Items[i].Spec)
	}
	return n, nil
}
