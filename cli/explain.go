package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/membernames"
	"github.com/flotilla-io/flotilla/internal/overrides"
	"github.com/flotilla-io/flotilla/internal/scheduler"
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
			ctx := context.Background()
			b, err := findBinding(ctx, c, ns, kind, name)
			if err != nil {
				return err
			}
			members := &clusterv1alpha1.MemberClusterList{}
			if err := c.List(ctx, members); err != nil {
				return fmt.Errorf("list MemberClusters: %w", err)
			}
			now, err := availableNow(members.Items, b)
			if err != nil {
				return err
			}
			ovs, err := overridesOf(ctx, c, b, members.Items)
			if err != nil {
				return err
			}
			printBinding(cmd.OutOrStdout(), b, now, ovs)
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

// availableNow is how many replicas of b each member could hold now, by
// member name: the scheduler library's answer for the members' capacity as
// they report it now, computed here and written nowhere.
func availableNow(members []clusterv1alpha1.MemberCluster, b workv1alpha1.Binding) (map[string]int64, error) {
	snap, err := scheduler.NewSnapshot(members)
	if err != nil {
		return nil, err
	}
	res, _ := scheduler.Preview(snap, scheduler.InputFromBinding("explain", b.BindingSpec(), b.BindingStatus()))
	now := map[string]int64{}
	for _, m := range res.Explanation.Members() {
		now[m.Name] = m.Available
	}
	return now, nil
}

// overridesOf lists the override policies that customise b's template, in
// the order they apply, each with the rules that name clusters that are not
// members (package membernames); nil when the template cannot be read.
func overridesOf(ctx context.Context, c client.Client, b workv1alpha1.Binding, members []clusterv1alpha1.MemberCluster) ([]string, error) {
	r := b.BindingSpec().Resource
	template := &unstructured.Unstructured{}
	template.SetAPIVersion(r.APIVersion)
	template.SetKind(r.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: r.Name}, template); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read the template %s %s: %w", r.Kind, r.Name, err)
	}
	cops := &policyv1alpha1.ClusterOverridePolicyList{}
	if err := c.List(ctx, cops); err != nil {
		return nil, fmt.Errorf("list ClusterOverridePolicies: %w", err)
	}
	ops := &policyv1alpha1.OverridePolicyList{}
	if r.Namespace != "" {
		if err := c.List(ctx, ops, client.InNamespace(r.Namespace)); err != nil {
			return nil, fmt.Errorf("list OverridePolicies in %s: %w", r.Namespace, err)
		}
	}
	selected, err := overrides.Selecting(template, cops.Items, ops.Items)
	if err != nil {
		return []string{err.Error()}, nil
	}
	names := make([]string, len(members))
	for i := range members {
		names[i] = members[i].Name
	}
	lines := []string{}
	for _, p := range selected {
		line := p.Ref.String()
		if unknown := membernames.Message(membernames.InOverride(p.Spec, membernames.Set(names))); unknown != "" {
			line += ": " + unknown
		}
		lines = append(lines, line)
	}
	return lines, nil
}

// field prints one "Label:  value" line; labels align in a column.
func field(out io.Writer, label, format string, args ...any) {
	fmt.Fprintf(out, "%-14s"+format+"\n", append([]any{label + ":"}, args...)...)
}

// printBinding explains a binding; now is each member's available replicas
// now (availableNow), shown next to the decision's where they differ.
// ovs are the lines of overridesOf; nil leaves them out.
func printBinding(out io.Writer, b workv1alpha1.Binding, now map[string]int64, ovs []string) {
	spec, status := b.BindingSpec(), b.BindingStatus()
	r := spec.Resource
	field(out, "Template", "%s %s %s", r.APIVersion, r.Kind, strings.TrimPrefix(r.Namespace+"/"+r.Name, "/"))
	field(out, "Binding", "%s", strings.TrimPrefix(b.GetNamespace()+"/"+b.GetName(), "/"))
	field(out, "Replicas", "%d", spec.Replicas)
	if rr := spec.ReplicaRequirements; rr != nil && len(rr.ResourceRequest) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(rr.ResourceRequest)) {
			v := rr.ResourceRequest[k]
			parts = append(parts, fmt.Sprintf("%s=%s", k, v.String()))
		}
		field(out, "Per replica", "%s", strings.Join(parts, ", "))
	}
	for _, t := range []string{workv1alpha1.ConditionInterpreted, workv1alpha1.ConditionScheduled, workv1alpha1.ConditionFullyApplied} {
		if c := conditions.Get(b, t); c != nil {
			field(out, t, "%s (%s): %s", c.Status, c.Reason, c.Message)
		}
	}
	field(out, "Placement", "%s", describeClusters(spec.Clusters))
	// Why the binding moved: each member it was evicted from and still keeps
	// a copy on until the task goes.
	for _, t := range spec.GracefulEvictionTasks {
		since := ""
		if t.CreationTimestamp != nil {
			since = ", since " + t.CreationTimestamp.UTC().Format(time.RFC3339)
		}
		field(out, "Evicted from", "%s (%s, purge mode %s%s): %s", t.FromCluster, t.Reason, t.PurgeMode, since, t.Message)
		if len(t.PreservedLabelState) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(t.PreservedLabelState)) {
				parts = append(parts, k+"="+t.PreservedLabelState[k])
			}
			field(out, "Preserved", "%s (labels on the replacement copies)", strings.Join(parts, ", "))
		}
	}
	switch {
	case ovs == nil:
	case len(ovs) == 0:
		field(out, "Overrides", "none")
	default:
		field(out, "Overrides", "%s", ovs[0])
		for _, o := range ovs[1:] {
			fmt.Fprintf(out, "%-14s%s\n", "", o)
		}
	}
	if d := status.SchedulingDecision; d != nil {
		field(out, "Strategy", "%s", d.Strategy)
		for _, t := range d.AffinityTerms {
			if t.Name == "" {
				continue // the plain clusterAffinity: the Scheduled condition says its outcome
			}
			field(out, "Affinity term", "%s: %s%s", t.Name, t.Reason, prefixed(": ", t.Message))
		}
		printDecision(out, d, "AVAILABLE AT DECISION", now)
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

// printDecision prints the per-member table of a decision. availableLabel
// heads the replicas each member could hold; when now is given and a member's
// differs from it, an AVAILABLE NOW column shows it.
func printDecision(out io.Writer, d *workv1alpha1.SchedulingDecision, availableLabel string, now map[string]int64) {
	changed := false
	for _, m := range d.Members {
		if n, ok := now[m.Name]; ok && n != m.AvailableReplicas {
			changed = true
		}
	}
	fmt.Fprintln(out, "\nMembers:")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "MEMBER\tSELECTED\tREPLICAS\t%s", availableLabel)
	if changed {
		fmt.Fprint(w, "\tAVAILABLE NOW")
	}
	fmt.Fprintf(w, "\tSCORE\tSCORES (%s)\tFILTERED BY\tREASON\n", strings.Join(d.ScorePlugins, ","))
	for _, m := range d.Members {
		fmt.Fprintf(w, "%s\t%t\t%d\t%s", m.Name, m.Selected, m.Replicas, replicaCount(m.AvailableReplicas))
		if changed {
			n, ok := now[m.Name]
			switch {
			case !ok:
				fmt.Fprint(w, "\tno longer a member")
			case n == m.AvailableReplicas:
				fmt.Fprint(w, "\tsame")
			default:
				fmt.Fprintf(w, "\t%s", replicaCount(n))
			}
		}
		fmt.Fprintf(w, "\t%d\t%v\t%s\t%s\n", m.Score, m.Scores, dash(m.FilteredBy), dash(m.Reason))
	}
	_ = w.Flush()
	if d.OmittedMembers > 0 {
		fmt.Fprintf(out, "(%d more members not shown)\n", d.OmittedMembers)
	}
}

// replicaCount is n, or "unknown" for a member whose capacity is not known.
func replicaCount(n int64) string {
	if n < 0 {
		return "unknown"
	}
	return fmt.Sprint(n)
}

// prefixed is p+s, or "" when s is empty.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
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
