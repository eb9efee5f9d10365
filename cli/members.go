package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func newMembersCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "members",
		Short: "List the fleet's members with their health, location and taints",
		Example: `  kubectl flotilla members
  kubectl flotilla members --context hub-admin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := g.hubClient()
			if err != nil {
				return err
			}
			list := &clusterv1alpha1.MemberClusterList{}
			if err := c.List(context.Background(), list); err != nil {
				return fmt.Errorf("list MemberClusters: %w", err)
			}
			printMembers(cmd.OutOrStdout(), list.Items)
			return nil
		},
	}
}

func printMembers(out io.Writer, members []clusterv1alpha1.MemberCluster) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tCAPI CLUSTER\tMODE\tREADY\tREASON\tREGION\tZONE\tPROVIDER\tNODES\tTAINTS")
	for i := range members {
		m := &members[i]
		ready, reason := "Unknown", ""
		if c := conditions.Get(m, clusterv1alpha1.ConditionReady); c != nil {
			ready, reason = string(c.Status), c.Reason
		}
		nodes := "-"
		if s := m.Status.NodeSummary; s != nil {
			nodes = fmt.Sprintf("%d/%d", s.ReadyNum, s.TotalNum)
		}
		var taints []string
		for _, t := range m.Spec.Taints {
			taints = append(taints, t.Key+":"+string(t.Effect))
		}
		if m.Spec.Unschedulable {
			taints = append(taints, "cordoned")
		}
		fmt.Fprintf(w, "%s\t%s/%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", m.Name, m.Spec.ClusterRef.Namespace, m.Spec.ClusterRef.Name,
			m.Spec.SyncMode, ready, dash(reason), dash(m.Spec.Region), dash(m.Spec.Zone), dash(m.Spec.Provider), nodes, dash(strings.Join(taints, ",")))
	}
	_ = w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
