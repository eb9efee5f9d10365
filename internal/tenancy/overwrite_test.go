package tenancy

import (
	"testing"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TestOverwriteIsHonouredOnlyByAClusterAdminsDecision: Overwrite is honoured
// from a ClusterPropagationPolicy (either binding kind) or in a namespace
// the cluster admin marked; a PropagationPolicy's Overwrite elsewhere acts
// as Abort with a message naming the policy, the namespace and the mark.
func TestOverwriteIsHonouredOnlyByAClusterAdminsDecision(t *testing.T) {
	pp := map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "uid-pp"}
	cpp := map[string]string{policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "uid-cpp"}
	both := map[string]string{policyv1alpha1.PropagationPolicyPermanentIDLabel: "uid-pp", policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel: "uid-cpp"}
	ppName := map[string]string{policyv1alpha1.PropagationPolicyNameAnnotation: "web"}
	marked := map[string]string{policyv1alpha1.AllowOverwriteLabel: "true"}
	refusedWeb := "conflictResolution Overwrite of PropagationPolicy tenant/web is not honoured, it acts as Abort: taking over an object Flotilla did not create is a cluster admin's decision — a ClusterPropagationPolicy, or the label policy.flotilla.io/allow-overwrite=true on namespace tenant"
	const (
		overwrite = policyv1alpha1.ConflictOverwrite
		abort     = policyv1alpha1.ConflictAbort
	)
	tests := []struct {
		name string
		in   Origin
		want Takeover
	}{
		{"nothing asked is Abort", Origin{Namespace: "tenant", Labels: pp}, Takeover{Resolution: abort}},
		{"Abort asked is Abort", Origin{Requested: abort, Namespace: "tenant", Labels: pp, NamespaceLabels: marked}, Takeover{Resolution: abort}},
		{"PropagationPolicy in an unmarked namespace", Origin{Requested: overwrite, Namespace: "tenant", Labels: pp, Annotations: ppName},
			Takeover{Resolution: abort, Refused: refusedWeb}},
		{"PropagationPolicy, the label not true", Origin{Requested: overwrite, Namespace: "tenant", Labels: pp, Annotations: ppName,
			NamespaceLabels: map[string]string{policyv1alpha1.AllowOverwriteLabel: "yes"}}, Takeover{Resolution: abort, Refused: refusedWeb}},
		{"PropagationPolicy in a marked namespace", Origin{Requested: overwrite, Namespace: "tenant", Labels: pp, NamespaceLabels: marked},
			Takeover{Resolution: overwrite}},
		{"ClusterPropagationPolicy claiming a namespaced template", Origin{Requested: overwrite, Namespace: "tenant", Labels: cpp},
			Takeover{Resolution: overwrite}},
		{"both claim labels count as the PropagationPolicy", Origin{Requested: overwrite, Namespace: "tenant", Labels: both, Annotations: ppName},
			Takeover{Resolution: abort, Refused: refusedWeb}},
		{"ClusterResourceBinding", Origin{Requested: overwrite, ClusterScoped: true, Labels: cpp}, Takeover{Resolution: overwrite}},
		{"ResourceBinding claimed by no policy", Origin{Requested: overwrite, Namespace: "tenant"},
			Takeover{Resolution: abort, Refused: "conflictResolution Overwrite of its policy is not honoured, it acts as Abort: taking over an object Flotilla did not create is a cluster admin's decision — a ClusterPropagationPolicy, or the label policy.flotilla.io/allow-overwrite=true on namespace tenant"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ConflictResolution(tt.in); got != tt.want {
				t.Errorf("ConflictResolution() = %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
