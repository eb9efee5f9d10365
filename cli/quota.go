package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

func newQuotaCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "quota",
		Short: "Show each tenant namespace's FederatedResourceQuotas: used / overall per key, and per member for static assignments",
		Long: `Show each FederatedResourceQuota: per key, what the namespace's placed bindings use, the fleet-wide
overall and what is left; for static assignments, what each member's ResourceQuota reports used of its hard
limit. Every namespace unless -n is given.`,
		Example: `  kubectl flotilla quota
  kubectl flotilla quota -n shop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, ns, err := g.hubClient()
			if err != nil {
				return err
			}
			var opts []client.ListOption
			if cmd.Flags().Changed("namespace") {
				opts = append(opts, client.InNamespace(ns))
			}
			list := &policyv1alpha1.FederatedResourceQuotaList{}
			if err := c.List(context.Background(), list, opts...); err != nil {
				return fmt.Errorf("list FederatedResourceQuotas: %w", err)
			}
			printQuotas(cmd.OutOrStdout(), list.Items)
			return nil
		},
	}
}

// printQuotas prints one row per quota and key, e.g.
//
//	NAMESPACE  QUOTA  KEY  USED  OVERALL  LEFT  MEMBERS (USED/HARD)
//	tenant     team   cpu  60    64       4     member1=3/10, member2=0/10
//
// followed by a line for each quota that is not in force.
func printQuotas(out io.Writer, quotas []policyv1alpha1.FederatedResourceQuota) {
	if len(quotas) == 0 {
		fmt.Fprintln(out, "No FederatedResourceQuotas found.")
		return
	}
	sort.Slice(quotas, func(i, j int) bool {
		if quotas[i].Namespace != quotas[j].Namespace {
			return quotas[i].Namespace < quotas[j].Namespace
		}
		return quotas[i].Name < quotas[j].Name
	})
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAMESPACE\tQUOTA\tKEY\tUSED\tOVERALL\tLEFT\tMEMBERS (USED/HARD)")
	var notInForce []string
	for i := range quotas {
		q := &quotas[i]
		for _, key := range sortedKeys(q.Spec.Overall) {
			overall := q.Spec.Overall[key]
			used, left := "-", "-"
			if u, ok := q.Status.OverallUsed[key]; ok {
				l := overall.DeepCopy()
				l.Sub(u)
				if l.Sign() < 0 {
					l = *resource.NewQuantity(0, overall.Format)
				}
				used, left = u.String(), l.String()
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", q.Namespace, q.Name, key, used, overall.String(), left, dash(perMember(q, key)))
		}
		if c := conditions.Get(q, policyv1alpha1.QuotaConditionReady); c != nil && c.Status != "True" {
			notInForce = append(notInForce, fmt.Sprintf("%s/%s: not in force (%s): %s", q.Namespace, q.Name, c.Reason, c.Message))
		}
		if c := conditions.Get(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied); c != nil && c.Status == "False" {
			notInForce = append(notInForce, fmt.Sprintf("%s/%s: static assignments not applied (%s): %s", q.Namespace, q.Name, c.Reason, c.Message))
		}
	}
	_ = w.Flush()
	for _, line := range notInForce {
		fmt.Fprintln(out, line)
	}
}

// perMember is "member1=3/10, member2=0/10": what each statically
// assigned member's ResourceQuota reports used of its hard limit of key.
func perMember(q *policyv1alpha1.FederatedResourceQuota, key corev1.ResourceName) string {
	var parts []string
	for _, a := range q.Spec.StaticAssignments {
		hard, ok := a.Hard[key]
		if !ok {
			continue
		}
		used := "?"
		for _, st := range q.Status.AggregatedStatus {
			if st.ClusterName != a.ClusterName {
				continue
			}
			if u, ok := st.Used[key]; ok {
				used = u.String()
			}
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%s", a.ClusterName, used, hard.String()))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(l corev1.ResourceList) []corev1.ResourceName {
	keys := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
