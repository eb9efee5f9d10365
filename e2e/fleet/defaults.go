package fleet

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
)

// EnrolLabel opts a CAPI Cluster into the fleet.
const EnrolLabel = "flotilla.io/enroll"

// DefaultMembers are the three members of `make dev`: different regions,
// zones and providers; two 4-CPU nodes each in member1 and member2, two
// 8-CPU nodes in member3, so that capacity-based division has something to
// tell apart.
func DefaultMembers() []MemberSpec {
	member := func(name, region, zone, provider, cpu string) MemberSpec {
		return MemberSpec{
			Name: name, Namespace: "fleet-clusters",
			Labels: map[string]string{
				EnrolLabel:                      "true",
				"topology.kubernetes.io/region": region,
				"topology.kubernetes.io/zone":   zone,
				"flotilla.io/provider":          provider,
			},
			NodePools: []NodePool{{Name: "worker", Count: 2, CPU: cpu, Memory: "16Gi", Pods: 110}},
		}
	}
	return []MemberSpec{
		member("member1", "eu-west", "eu-west-a", "aws", "4"),
		member("member2", "eu-west", "eu-west-b", "gcp", "4"),
		member("member3", "us-east", "us-east-a", "azure", "8"),
	}
}

// DefaultManagerArgs are the flotilla-manager flags of the local fleet: members
// are revisited and capacity published more often than in production, so that
// tests see changes in seconds.
func DefaultManagerArgs() []string {
	return []string{"--leader-elect=false", "--member-sync-period=10s", "--estimator-publish-interval=2s", "--failover-grace-period=30s"}
}

// WaitClustersAvailable waits until Cluster API reports every member's
// Cluster Available.
func (f *Fleet) WaitClustersAvailable(ctx context.Context, timeout time.Duration) error {
	return waitFor(ctx, "CAPI Clusters Available", timeout, func(ctx context.Context) error {
		for _, m := range f.Members() {
			c, err := f.Cluster(ctx, m)
			if err != nil {
				return err
			}
			if !conditions.IsTrue(c, capiv1.AvailableCondition) {
				return fmt.Errorf("Cluster %s/%s is not Available", m.Spec.Namespace, m.Spec.Name)
			}
		}
		return nil
	})
}

// Describe says how to reach the hub and each member.
func (f *Fleet) Describe() string {
	var b strings.Builder
	kubectl := filepath.Join(f.opts.BinDir, "kubectl")
	fmt.Fprintf(&b, "hub:     %s --kubeconfig %s get memberclusters,resourcebindings -A\n", kubectl, f.Hub.Kubeconfig())
	fmt.Fprintf(&b, "         %s --kubeconfig %s explain deployment/fleet-web -n shop\n", filepath.Join(f.opts.AddonBinDir, "kubectl-flotilla"), f.Hub.Kubeconfig())
	for _, m := range f.Members() {
		fmt.Fprintf(&b, "%-8s %s --kubeconfig %s get nodes,pods -A\n", m.Name()+":", kubectl, m.Kubeconfig())
	}
	fmt.Fprintf(&b, "logs:    %s, %s and %s\n", filepath.Join(f.Hub.Dir(), "logs"),
		filepath.Join(f.opts.Dir, "members", "*", "logs"), filepath.Join(f.opts.Dir, "members", "*", "addons"))
	return b.String()
}
