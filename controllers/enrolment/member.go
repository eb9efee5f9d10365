package enrolment

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// placement is what the scheduler's field selectors and spread constraints
// read of a member, derived from its Cluster.
type placement struct {
	Provider, Region, Zone string
	Zones                  []string
}

// placementOf derives provider, region and zones from the Cluster:
//   - provider: the flotilla.io/provider label; else the infrastructure kind
//     less its "Cluster" and "Managed" suffixes, lower-cased (DockerCluster →
//     docker, AWSManagedCluster → aws), for references to the CAPI
//     infrastructure group *.cluster.x-k8s.io;
//   - region: the topology.kubernetes.io/region label;
//   - zone: the topology.kubernetes.io/zone label; else the only failure
//     domain, when the Cluster has exactly one;
//   - zones: the Cluster's failure domains, sorted; else the zone.
func placementOf(c *capiv1.Cluster) placement {
	p := placement{Provider: c.Labels[clusterv1alpha1.ProviderLabel], Region: c.Labels[corev1.LabelTopologyRegion], Zone: c.Labels[corev1.LabelTopologyZone]}
	if p.Provider == "" {
		p.Provider = providerFromInfrastructure(c.Spec.InfrastructureRef)
	}
	for _, fd := range c.Status.FailureDomains {
		p.Zones = append(p.Zones, fd.Name)
	}
	slices.Sort(p.Zones)
	if p.Zone == "" && len(p.Zones) == 1 {
		p.Zone = p.Zones[0]
	}
	if len(p.Zones) == 0 && p.Zone != "" {
		p.Zones = []string{p.Zone}
	}
	// The member's fields are labels in all but name: drop what cannot be one.
	for _, f := range []*string{&p.Provider, &p.Region, &p.Zone} {
		if len(validation.IsValidLabelValue(*f)) > 0 {
			*f = ""
		}
	}
	return p
}

func providerFromInfrastructure(ref capiv1.ContractVersionedObjectReference) string {
	if !strings.HasSuffix(ref.APIGroup, ".cluster.x-k8s.io") || !strings.HasSuffix(ref.Kind, "Cluster") {
		return ""
	}
	name := strings.TrimSuffix(ref.Kind, "Cluster")
	name = strings.TrimSuffix(name, "Managed")
	return strings.ToLower(name)
}

// memberLabels are the labels enrolment keeps on a member: provider, region
// and zone under their well-known keys, and every Cluster label under
// member.flotilla.io/, so that cluster affinity by label sees them.
func memberLabels(c *capiv1.Cluster, p placement) map[string]string {
	out := map[string]string{}
	for k, v := range map[string]string{clusterv1alpha1.ProviderLabel: p.Provider, corev1.LabelTopologyRegion: p.Region, corev1.LabelTopologyZone: p.Zone} {
		if v != "" {
			out[k] = v
		}
	}
	for k, v := range c.Labels {
		if strings.HasPrefix(k, clusterv1alpha1.MemberLabelPrefix) {
			out[k] = v
		}
	}
	return out
}

// ownsLabel: labels enrolment sets, and therefore removes when the Cluster
// no longer has them. Labels users put on the member by hand stay.
func ownsLabel(k string) bool {
	return k == clusterv1alpha1.ProviderLabel || k == corev1.LabelTopologyRegion || k == corev1.LabelTopologyZone ||
		strings.HasPrefix(k, clusterv1alpha1.MemberLabelPrefix)
}

// applyPlacement writes the Cluster-derived fields and labels onto m.
func applyPlacement(m *clusterv1alpha1.MemberCluster, c *capiv1.Cluster) {
	p := placementOf(c)
	m.Spec.Provider, m.Spec.Region, m.Spec.Zone, m.Spec.Zones = p.Provider, p.Region, p.Zone, p.Zones
	if mode := clusterv1alpha1.SyncMode(c.Annotations[clusterv1alpha1.SyncModeAnnotation]); mode == clusterv1alpha1.Push || mode == clusterv1alpha1.Pull {
		m.Spec.SyncMode = mode
	}
	labels := m.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k := range labels {
		if ownsLabel(k) {
			delete(labels, k)
		}
	}
	for k, v := range memberLabels(c, p) {
		labels[k] = v
	}
	m.SetLabels(labels)
}

// reconcileMemberCluster creates the member or brings its Cluster-derived
// spec and labels up to date, and labels the Cluster with the member's name
// (the add-on ClusterResourceSets select on that label).
func (r *Reconciler) reconcileMemberCluster(ctx context.Context, s *scope) (bool, error) {
	c := s.cluster
	m := &clusterv1alpha1.MemberCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.memberName}, m)
	switch {
	case apierrors.IsNotFound(err):
		m = &clusterv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: s.memberName},
			Spec: clusterv1alpha1.MemberClusterSpec{
				ClusterRef: clusterv1alpha1.ClusterReference{Namespace: c.Namespace, Name: c.Name},
				SyncMode:   clusterv1alpha1.Push,
			},
		}
		applyPlacement(m, c)
		if err := r.Client.Create(ctx, m); err != nil {
			return false, fmt.Errorf("create MemberCluster %s for Cluster %s/%s: %w", s.memberName, c.Namespace, c.Name, err)
		}
	case err != nil:
		return false, fmt.Errorf("read MemberCluster %s: %w", s.memberName, err)
	case m.Spec.ClusterRef != (clusterv1alpha1.ClusterReference{Namespace: c.Namespace, Name: c.Name}):
		// Taken between naming and now: naming reports it next time.
		s.requeue(r.SyncPeriod)
		return false, nil
	}
	// Opted in again while draining: the member stays. The taint is written
	// apart from the Terminating condition, so either may be there alone.
	if err := r.writeTerminatingTaint(ctx, m, false); err != nil {
		return false, err
	}
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return false, err
	}
	applyPlacement(m, c)
	conditions.Delete(m, clusterv1alpha1.ConditionTerminating)
	s.member, s.memberPatch = m, helper
	setLabel(c, clusterv1alpha1.MemberLabel, s.memberName)
	return true, nil
}
