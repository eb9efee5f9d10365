package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/interpreter/luavm"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

func newPreviewCommand(g *globalFlags) *cobra.Command {
	var files []string
	var fromScratch bool
	cmd := &cobra.Command{
		Use:   "preview -f TEMPLATE -f POLICY",
		Short: "Compute the placement a policy would give a template against the fleet as it is now, without writing anything",
		Example: `  kubectl flotilla preview -f fleet-web.yaml -f fleet-web-policy.yaml
  kubectl flotilla preview -f app.yaml --from-scratch   # the policy in the same file`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			template, placement, err := readPreviewInputs(files)
			if err != nil {
				return err
			}
			c, ns, err := g.hubClient()
			if err != nil {
				return err
			}
			if template.GetNamespace() == "" {
				template.SetNamespace(ns)
			}
			return preview(cmd.Context(), cmd.OutOrStdout(), c, template, placement, fromScratch)
		},
	}
	cmd.Flags().StringArrayVarP(&files, "filename", "f", nil, "YAML files holding the template and a PropagationPolicy or ClusterPropagationPolicy")
	cmd.Flags().BoolVar(&fromScratch, "from-scratch", false, "Ignore where the template runs now (as a rebalance would)")
	return cmd
}

// readPreviewInputs finds one template and one propagation policy in files.
func readPreviewInputs(files []string) (*unstructured.Unstructured, *policyv1alpha1.Placement, error) {
	if len(files) == 0 {
		return nil, nil, errors.New("give the template and the policy with -f")
	}
	var template *unstructured.Unstructured
	var placement *policyv1alpha1.Placement
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytesReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, nil, fmt.Errorf("%s: %w", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			switch {
			case u.GroupVersionKind().Group == policyv1alpha1.GroupVersion.Group && (u.GetKind() == "PropagationPolicy" || u.GetKind() == "ClusterPropagationPolicy"):
				spec := &policyv1alpha1.PropagationSpec{}
				raw, _ := yaml.Marshal(u.Object["spec"])
				if err := yaml.UnmarshalStrict(raw, spec); err != nil {
					return nil, nil, fmt.Errorf("%s: %s %s: %w", f, u.GetKind(), u.GetName(), err)
				}
				placement = &spec.Placement
			case template == nil:
				template = u
			default:
				return nil, nil, fmt.Errorf("%s: more than one template (%s %s); preview one at a time", f, u.GetKind(), u.GetName())
			}
		}
	}
	if template == nil {
		return nil, nil, errors.New("no template found in the files")
	}
	if placement == nil {
		return nil, nil, errors.New("no PropagationPolicy or ClusterPropagationPolicy found in the files")
	}
	return template, placement, nil
}

func preview(ctx context.Context, out io.Writer, c client.Client, template *unstructured.Unstructured, placement *policyv1alpha1.Placement, fromScratch bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	count, requirements, err := customizedInterpreter(ctx, c).GetReplicas(ctx, template)
	if err != nil {
		return fmt.Errorf("read %s %s: %w", template.GetKind(), template.GetName(), err)
	}
	members := &clusterv1alpha1.MemberClusterList{}
	if err := c.List(ctx, members); err != nil {
		return fmt.Errorf("list MemberClusters: %w", err)
	}
	snap, err := scheduler.NewSnapshot(members.Items)
	if err != nil {
		return err
	}
	in := scheduler.Input{
		Key: "preview", Namespace: template.GetNamespace(),
		APIVersion: template.GetAPIVersion(), Kind: template.GetKind(),
		Replicas: count, Requirements: requirements, Placement: placement, Rebalance: fromScratch,
	}
	if !fromScratch {
		if b, err := findBinding(ctx, c, template.GetNamespace(), template.GetKind(), template.GetName()); err == nil {
			in.Current = b.BindingSpec().Clusters
			in.ObservedAffinityName = b.BindingStatus().SchedulerObservedAffinityName
		}
	}
	res, schedErr := scheduler.Preview(snap, in)
	field(out, "Template", "%s %s/%s, %d replicas", template.GetKind(), template.GetNamespace(), template.GetName(), count)
	if schedErr != nil {
		// The message starts with any clusterNames that name no member.
		field(out, "Result", "%s: %s", scheduler.ReasonOf(schedErr), messageOf(schedErr))
	} else {
		field(out, "Placement", "%s", describeClusters(res.Clusters))
		if res.UnknownMembers != "" {
			field(out, "Warning", "%s", res.UnknownMembers)
		}
	}
	if d := res.Decision(); d != nil {
		field(out, "Strategy", "%s", d.Strategy)
		printDecision(out, d, "AVAILABLE NOW", nil)
	}
	fmt.Fprintln(out, "\nPreview only: nothing was written. Capacity the manager has just assigned but members have not yet reported is not counted.")
	return nil
}

func messageOf(err error) string {
	var e *scheduler.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// customizedInterpreter is the interpreter with the hub's
// ResourceInterpreterCustomizations loaded, so that a customized kind is
// previewed with the replicas the manager would read. Without the right
// to list them (or on a hub without the kind), the built-in interpreter.
func customizedInterpreter(ctx context.Context, c client.Reader) *interpreter.Interpreter {
	list := &configv1alpha1.ResourceInterpreterCustomizationList{}
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	i := interpreter.New(luavm.New(luavm.Limits{}))
	i.Load(list.Items)
	return i
}
