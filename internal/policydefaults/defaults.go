// Package policydefaults fills in what Karmada's admission webhook fills in
// a PropagationPolicy or ClusterPropagationPolicy, so that a document
// Karmada accepts is accepted here too and means the same: Flotilla's
// schema requires these fields spelled out, Karmada's defaulting supplies
// them. The defaults are written into the stored object, where users see
// them.
package policydefaults

import (
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// ApplicationGracePeriodSeconds is how long a Gracefully purged copy is
// kept by application failover when the policy does not say (Karmada's 600).
const ApplicationGracePeriodSeconds int32 = 600

// Propagation applies Karmada's defaults to a policy's spec:
//   - a spread constraint naming neither spreadByField nor spreadByLabel
//     spreads by cluster, and one without minGroups needs at least 1 group;
//   - Divided replica scheduling without a replicaDivisionPreference is
//     Weighted (equal weights unless a weightPreference says otherwise);
//   - application failover purging Gracefully without gracePeriodSeconds
//     keeps the old copy at most 600 s.
//
// Fields already set are left as they are.
func Propagation(spec *policyv1alpha1.PropagationSpec) {
	placement(&spec.Placement)
	if spec.Failover != nil && spec.Failover.Application != nil {
		application(spec.Failover.Application)
	}
}

func placement(p *policyv1alpha1.Placement) {
	for i := range p.SpreadConstraints {
		c := &p.SpreadConstraints[i]
		if c.SpreadByField == "" && c.SpreadByLabel == "" {
			c.SpreadByField = policyv1alpha1.SpreadByFieldCluster
		}
		if c.MinGroups == 0 {
			c.MinGroups = 1
		}
	}
	if rs := p.ReplicaScheduling; rs != nil && divided(rs) && rs.ReplicaDivisionPreference == "" {
		rs.ReplicaDivisionPreference = policyv1alpha1.ReplicaDivisionPreferenceWeighted
	}
}

// divided says whether replicas are divided; the schema defaults an unset
// type to Divided, so an empty one means Divided here too.
func divided(rs *policyv1alpha1.ReplicaSchedulingStrategy) bool {
	return rs.ReplicaSchedulingType == "" || rs.ReplicaSchedulingType == policyv1alpha1.ReplicaSchedulingTypeDivided
}

func application(a *policyv1alpha1.ApplicationFailoverBehavior) {
	// The schema defaults an unset purge mode to Gracefully.
	gracefully := a.PurgeMode == "" || a.PurgeMode == policyv1alpha1.PurgeModeGracefully
	if gracefully && a.GracePeriodSeconds == nil {
		seconds := ApplicationGracePeriodSeconds
		a.GracePeriodSeconds = &seconds
	}
}
