package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/envelope"
	"github.com/flotilla-io/flotilla/internal/overrides"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// RenderedQuota checks and charges what a ResourceBinding's Works carry
// against its namespace's FederatedResourceQuotas (the quota tracker).
type RenderedQuota interface {
	ChargeRendered(key, namespace string, members []tracker.MemberRendering) (tracker.Rendering, error)
}

// chargeQuota checks the rendered Works of a ResourceBinding against its
// namespace's quotas before they are written: the usage of what each
// member would receive (quota.ObjectsUsage: after overrides, envelopes
// unwrapped, the tenancy rule applied) beyond what the binding already
// uses. A member whose Work would take the namespace past a quota is
// refused: its Work is not written (an existing one stays as it is), and
// the Rendered condition says QuotaExceeded, naming the quota, key,
// amounts and what raised the usage (override rules, the envelope). Members
// that failed to render keep their Works and count with them. The binding
// is charged with the result, recorded in status.renderedUsage.
//
// The propagated dependencies (ConfigMaps, Secrets… of propagateDeps) are
// not counted: they are objects of the namespace that several templates
// may share.
func (r *Renderer) chargeQuota(ctx context.Context, s *rendering, rendered map[string][]workv1alpha1.Manifest) (map[string]bool, error) {
	if r.Quota == nil || s.key.Kind != KindResourceBinding {
		return nil, nil
	}
	works, err := r.worksOf(ctx, s.binding)
	if err != nil {
		return nil, err
	}
	kept := map[string][]workv1alpha1.Manifest{}
	for i := range works {
		if works[i].DeletionTimestamp.IsZero() {
			kept[works[i].Labels[clusterv1alpha1.MemberLabel]] = works[i].Spec.Workload.Manifests
		}
	}
	pods := func(obj *unstructured.Unstructured) (int64, *workv1alpha1.ReplicaRequirements, bool, error) {
		return r.Interpreter.Pods(ctx, obj)
	}
	deps := map[string]bool{}
	for _, d := range s.deps {
		deps[d.GetKind()+"/"+d.GetName()] = true
	}
	var members []tracker.MemberRendering
	for _, target := range s.binding.BindingSpec().Clusters {
		m := tracker.MemberRendering{Member: target.Name}
		if manifests, ok := kept[target.Name]; ok {
			if m.Kept, err = manifestsUsage(manifests, deps, pods); err != nil {
				return nil, fmt.Errorf("usage of the Work of member %s: %w", target.Name, err)
			}
		}
		m.Rendered = m.Kept
		if manifests, ok := rendered[target.Name]; ok {
			if m.Rendered, err = manifestsUsage(manifests, deps, pods); err != nil {
				return nil, fmt.Errorf("usage of what member %s would receive: %w", target.Name, err)
			}
		}
		members = append(members, m)
	}
	b := s.binding
	out, err := r.Quota.ChargeRendered(b.GetNamespace()+"/"+b.GetName(), b.GetNamespace(), members)
	if err != nil {
		return nil, fmt.Errorf("charge the rendered usage to quota: %w", err)
	}
	b.(*workv1alpha1.ResourceBinding).Status.RenderedUsage = out.Charged
	refused := map[string]bool{}
	for _, m := range members {
		if err := out.Refused[m.Member]; err != nil {
			refused[m.Member] = true
			s.fail(m.Member, workv1alpha1.BindingReasonQuotaExceeded, "%v%s; its Work is not written (one it has stays as it is) until quota frees",
				err, r.raisedBy(ctx, s, m.Member))
		}
	}
	return refused, nil
}

// raisedBy names what makes a member's rendering larger than the template:
// the override rules applied for it and the envelope, as
// "; raised by OverridePolicy ns/p rule 0, carried by envelope ConfigMap ns/c".
func (r *Renderer) raisedBy(ctx context.Context, s *rendering, member string) string {
	var parts []string
	mc := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: member}, mc); err == nil {
		if res, err := overrides.Apply(s.template, mc, s.clusterPolicies, s.policies); err == nil && len(res.Applied) > 0 {
			rules := make([]string, len(res.Applied))
			for i, a := range res.Applied {
				rules[i] = a.String()
			}
			parts = append(parts, "raised by "+strings.Join(rules, ", "))
		}
	}
	if envelope.Is(s.template) {
		parts = append(parts, fmt.Sprintf("carried by envelope %s %s", s.template.GetKind(), objectName(s.template.GetNamespace(), s.template.GetName())))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// manifestsUsage is what a member's ResourceQuota counts of a Work's
// manifests, leaving out the propagated dependencies (kind/name in deps).
func manifestsUsage(manifests []workv1alpha1.Manifest, deps map[string]bool, pods quota.PodsOf) (corev1.ResourceList, error) {
	objs, err := decodeManifests(manifests)
	if err != nil {
		return nil, err
	}
	counted := objs[:0]
	for _, o := range objs {
		if !deps[o.GetKind()+"/"+o.GetName()] {
			counted = append(counted, o)
		}
	}
	return quota.ObjectsUsage(counted, pods)
}

// decodeManifests reads a Work's manifests back into objects.
func decodeManifests(manifests []workv1alpha1.Manifest) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, 0, len(manifests))
	for i, m := range manifests {
		obj := &unstructured.Unstructured{}
		if err := json.Unmarshal(m.Raw, &obj.Object); err != nil {
			return nil, fmt.Errorf("decode manifest %d: %w", i, err)
		}
		out = append(out, obj)
	}
	return out, nil
}
