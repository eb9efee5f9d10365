package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// DrainTaint is the taint `kubectl flotilla drain` adds: NoExecute, so that
// the taint manager moves every binding that does not tolerate it away, at
// the eviction rate. `uncordon` removes it.
const DrainTaint = clusterv1alpha1.TaintCordoned

// newTaintCommands returns taint, cordon, uncordon and drain.
func newTaintCommands(g *globalFlags) []*cobra.Command {
	var overwrite bool
	taint := &cobra.Command{
		Use:   "taint MEMBER KEY[=VALUE]:EFFECT[-]...",
		Short: "Add or remove taints of a member (NoSchedule keeps new placements off, NoExecute moves placements away)",
		Example: `  kubectl flotilla taint member2 maintenance=kernel:NoSchedule
  kubectl flotilla taint member2 maintenance:NoExecute
  kubectl flotilla taint member2 maintenance:NoExecute-   # remove it
  kubectl flotilla taint member2 maintenance-             # remove every effect of the key`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			specs := make([]taintSpec, 0, len(args)-1)
			for _, a := range args[1:] {
				s, err := parseTaintSpec(a)
				if err != nil {
					return err
				}
				specs = append(specs, s)
			}
			return editMember(g, args[0], cmd, func(m *clusterv1alpha1.MemberCluster) (string, error) {
				return applyTaints(m, specs, overwrite, time.Now())
			})
		},
	}
	taint.Flags().BoolVar(&overwrite, "overwrite", false, "Replace the value of a taint of the same key and effect")

	cordon := &cobra.Command{
		Use:     "cordon MEMBER",
		Short:   "Mark a member unschedulable: nothing new is placed on it, what runs there stays",
		Example: `  kubectl flotilla cordon member2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editMember(g, args[0], cmd, func(m *clusterv1alpha1.MemberCluster) (string, error) {
				m.Spec.Unschedulable = true
				return "cordoned", nil
			})
		},
	}
	uncordon := &cobra.Command{
		Use:     "uncordon MEMBER",
		Short:   "Mark a member schedulable again, and remove the taint drain added",
		Example: `  kubectl flotilla uncordon member2`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return editMember(g, args[0], cmd, func(m *clusterv1alpha1.MemberCluster) (string, error) {
				m.Spec.Unschedulable = false
				m.Spec.Taints = slices.DeleteFunc(m.Spec.Taints, func(t corev1.Taint) bool {
					return t.Key == DrainTaint && t.Effect == corev1.TaintEffectNoExecute
				})
				return "uncordoned", nil
			})
		},
	}
	var wait time.Duration
	drain := &cobra.Command{
		Use:   "drain MEMBER",
		Short: "Cordon a member and taint it " + DrainTaint + ":NoExecute, so that its workloads move to other members",
		Long: "drain cordons the member and adds the taint " + DrainTaint + ":NoExecute. The taint manager then evicts every\n" +
			"binding that does not tolerate it, at --resource-eviction-rate, and each binding's purge mode decides when\n" +
			"the copy on the member goes. `kubectl flotilla uncordon` undoes both.",
		Example: `  kubectl flotilla drain member2
  kubectl flotilla drain member2 --wait 10m   # until nothing is placed on member2 any more`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := editMember(g, args[0], cmd, func(m *clusterv1alpha1.MemberCluster) (string, error) {
				m.Spec.Unschedulable = true
				drained := func(t corev1.Taint) bool { return t.Key == DrainTaint && t.Effect == corev1.TaintEffectNoExecute }
				if !slices.ContainsFunc(m.Spec.Taints, drained) {
					if _, err := applyTaints(m, []taintSpec{{taint: corev1.Taint{Key: DrainTaint, Effect: corev1.TaintEffectNoExecute}}}, false, time.Now()); err != nil {
						return "", err
					}
				}
				return "cordoned and tainted " + DrainTaint + ":NoExecute", nil
			})
			if err != nil || wait <= 0 {
				return err
			}
			return waitDrained(g, args[0], cmd, wait)
		},
	}
	drain.Flags().DurationVar(&wait, "wait", 0, "Wait up to this long until no binding is placed on the member nor keeps a copy there (graceful eviction tasks)")
	return []*cobra.Command{taint, cordon, uncordon, drain}
}

// taintSpec is one KEY[=VALUE]:EFFECT[-] argument.
type taintSpec struct {
	taint  corev1.Taint
	remove bool
}

// parseTaintSpec reads kubectl taint's syntax: key=value:Effect adds,
// key:Effect- and key- remove.
func parseTaintSpec(s string) (taintSpec, error) {
	var out taintSpec
	body, remove := strings.CutSuffix(s, "-")
	out.remove = remove
	keyValue, effect, hasEffect := strings.Cut(body, ":")
	if !hasEffect && !remove {
		return out, fmt.Errorf("taint %q: want KEY[=VALUE]:EFFECT, or KEY[:EFFECT]- to remove", s)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return out, fmt.Errorf("taint %q: invalid key: %s", s, strings.Join(errs, "; "))
	}
	if value != "" {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return out, fmt.Errorf("taint %q: invalid value: %s", s, strings.Join(errs, "; "))
		}
	}
	if hasEffect {
		switch e := corev1.TaintEffect(effect); e {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
			out.taint.Effect = e
		default:
			return out, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
		}
	}
	out.taint.Key, out.taint.Value = key, value
	return out, nil
}

// applyTaints adds (with timeAdded now) or removes taints and says what it did.
func applyTaints(m *clusterv1alpha1.MemberCluster, specs []taintSpec, overwrite bool, now time.Time) (string, error) {
	var done []string
	for _, s := range specs {
		t := s.taint
		same := func(have corev1.Taint) bool {
			return have.Key == t.Key && (t.Effect == "" || have.Effect == t.Effect)
		}
		if s.remove {
			if !slices.ContainsFunc(m.Spec.Taints, same) {
				return "", fmt.Errorf("member %s has no taint %s", m.Name, describeTaint(t))
			}
			m.Spec.Taints = slices.DeleteFunc(m.Spec.Taints, same)
			done = append(done, "removed "+describeTaint(t))
			continue
		}
		at := metav1.NewTime(now)
		t.TimeAdded = &at
		if i := slices.IndexFunc(m.Spec.Taints, same); i >= 0 {
			if !overwrite {
				return "", fmt.Errorf("member %s already has taint %s; use --overwrite to change its value", m.Name, describeTaint(m.Spec.Taints[i]))
			}
			if m.Spec.Taints[i].Value != t.Value {
				m.Spec.Taints[i] = t
			}
			done = append(done, "set "+describeTaint(t))
			continue
		}
		m.Spec.Taints = append(m.Spec.Taints, t)
		done = append(done, "added "+describeTaint(t))
	}
	return strings.Join(done, ", "), nil
}

func describeTaint(t corev1.Taint) string {
	s := t.Key
	if t.Value != "" {
		s += "=" + t.Value
	}
	if t.Effect != "" {
		s += ":" + string(t.Effect)
	}
	return s
}

// editMember reads a member, changes it and writes it with an optimistic
// lock, retrying when another writer got there first.
func editMember(g *globalFlags, name string, cmd *cobra.Command, change func(*clusterv1alpha1.MemberCluster) (string, error)) error {
	c, _, err := g.hubClient()
	if err != nil {
		return err
	}
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		m := &clusterv1alpha1.MemberCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
			return fmt.Errorf("read member %s: %w", name, err)
		}
		before := m.DeepCopy()
		what, err := change(m)
		if err != nil {
			return err
		}
		err = c.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) && attempt < 5 {
			continue
		}
		if err != nil {
			return fmt.Errorf("write member %s: %w", name, err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "member/%s %s\n", name, what)
		return nil
	}
}

// waitDrained polls until no binding is placed on the member nor keeps an
// evicted copy there.
func waitDrained(g *globalFlags, member string, cmd *cobra.Command, timeout time.Duration) error {
	c, _, err := g.hubClient()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		n, err := placedOn(ctx, c, member)
		if err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintf(cmd.OutOrStdout(), "member/%s drained\n", member)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("member %s still holds %d bindings after %s", member, n, timeout)
		case <-time.After(2 * time.Second):
		}
	}
}
