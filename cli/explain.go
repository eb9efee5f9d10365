package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

func newExplainCommand(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "explain KIND/NAME",
		Short: "Explain where a template was placed and why: filters, scores, capacity, status per member",
		Example: `  kubectl flotilla explain deployment/fleet-web -n shop
  kubectl flotilla explain clusterrole/reader`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, ok := strings.Cut(args[0], "/")
			if !ok || kind == "" || name == "" {
				return fmt.Errorf("want KIND/NAME, e.g. deployment/web; got %q", args[0])
			}
			c, ns, err := g.hubClient()
			if err != nil {
				return err
			}
			b, err := findBinding(context.Background(), c, ns, kind, name)
			if err != nil {
				return err
			}
			printBinding(cmd.OutOrStdout(), b)
			return nil
		},
	}
}

// findBinding finds the binding of a template by its kind and name: the
// ResourceBinding in the namespace, else a ClusterResourceBinding.
func findBinding(ctx context.Context, c client.Client, ns, kind, name string) (workv1alpha1.Binding, error) {
	rbs := &workv1alpha1.ResourceBindingList{}
	if err := c.List(ctx, rbs, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("list ResourceBindings in %s: %w", ns, err)
	}
	for i := range rbs.Items {
		if r := rbs.Items[i].Spec.Resource; strings.EqualFold(r.Kind, kind) && r.Name == name {
			return &rbs.Items[i], nil
		}
	}
	crbs := &workv1alpha1.ClusterResourceBindingList{}
	if err := c.List(ctx, crbs); err != nil {
		return nil, fmt.Errorf("list ClusterResourceBindings: %w", err)
	}
	for i := range crbs.Items {
		if r := crbs.Items[i].Spec.Resource; strings.EqualFold(r.Kind, kind) && r.Name == name {
			return &crbs.Items[i], nil
		}
	}
	return nil, fmt.Errorf("no binding for %s/%s in namespace %q: is a PropagationPolicy selecting it, and is the namespace federated (label flotilla.io/federated=true)?", kind, name, ns)
}

func printBinding(out io.Writer, b workv1alpha1.Binding) {
	spec, status := b.BindingSpec(), b.BindingStatus()
	r := spec.Resource
	fmt.Fprintf(out, "Template:   %s %s %s\n", r.APIVersion, r.Kind, strings.TrimPrefix(r.Namespace+"/"+r.Name, "/"))
	fmt.Fprintf(out, "Binding:    %s\n", strings.TrimPrefix(b.GetNamespace()+"/"+b.GetName(), "/"))
	fmt.Fprintf(out, "Replicas:   %d\n", spec.Replicas)
	if rr := spec.ReplicaRequirements; rr != nil && len(rr.ResourceRequest) > 0 {
		var parts []string
		for k, v := range rr.ResourceRequest {
			parts = append(parts, fmt.Sprintf("%s=%s", k, v.String()))
		}
		fmt.Fprintf(out, "Per replica: %s\n", strings.Join(parts, ", "))
	}
	for _, t := range []string{workv1alpha1.ConditionScheduled, workv1alpha1.ConditionFullyApplied} {
		if c := conditions.Get(b, t); c != nil {
			fmt.Fprintf(out, "%-12s%s (%s): %s\n", t+":", c.Status, c.Reason, c.Message)
		}
	}
	fmt.Fprintf(out, "Placement:  %s\n", describeClusters(spec.Clusters))
	if d := status.SchedulingDecision; d != nil {
		fmt.Fprintf(out, "Strategy:   %s\n", d.Strategy)
		for _, t := range d.AffinityTerms {
			fmt.Fprintf(out, "Affinity term %q: %s %s\n", t.Name, t.Reason, t.Message)
		}
		printDecision(out, d)
	}
	if len(status.AggregatedStatus) > 0 {
		fmt.Fprintln(out, "\nStatus in members:")
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "MEMBER\tAPPLIED\tHEALTH\tMESSAGE")
		for _, s := range status.AggregatedStatus {
			fmt.Fprintf(w, "%s\t%t\t%s\t%s\n", s.ClusterName, s.Applied, dash(string(s.Health)), dash(s.AppliedMessage))
		}
		_ = w.Flush()
	}
}

func printDecision(out io.Writer, d *workv1alpha1.SchedulingDecision) {
	fmt.Fprintln(out, "\nMembers:")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "MEMBER\tSELECTED\tREPLICAS\tAVAILABLE\tSCORE\tSCORES (%s)\tFILTERED BY\tREASON\n", strings.Join(d.ScorePlugins, ","))
	for _, m := range d.Members {
		avail := fmt.Sprint(m.AvailableReplicas)
		if m.AvailableReplicas < 0 {
			avail = "unknown"
		}
		fmt.Fprintf(w, "%s\t%t\t%d\t%s\t%d\t%v\t%s\t%s\n", m.Name, m.Selected, m.Replicas, avail, m.Score, m.Scores, dash(m.FilteredBy), dash(m.Reason))
	}
	_ = w.Flush()
	if d.OmittedMembers > 0 {
		fmt.Fprintf(out, "(%d more members not shown)\n", d.OmittedMembers)
	}
}

func describeClusters(clusters []workv1alpha1.TargetCluster) string {
	if len(clusters) == 0 {
		return "none"
	}
	parts := make([]string, len(clusters))
	for i, c := range clusters {
		parts[i] = fmt.Sprintf("%s:%d", c.Name, c.Replicas)
	}
	return strings.Join(parts, ", ")
}
