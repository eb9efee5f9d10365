package enrolment

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// The agent's rights in its Pull-mode member. The hub never reaches a
// Pull-mode member, so what Access grants the hub identity directly in a
// Push-mode member travels to the agent through its ClusterResourceSet: the
// ConfigMap flotilla-agent-<member>-rights, the CRS's first resource, holds
//
//   - guard.yaml: the agent's admission policy and binding (memberIdentity
//     guard, the hub identity's rules on the agent's username), applied
//     first (Cluster API applies a resource's keys in sorted order);
//   - rights.yaml: the agent's roles (memberIdentity roles: no write
//     anywhere), its granted role, and each managed namespace labelled
//     flotilla.io/managed-namespace=true with the RoleBinding flotilla-agent.
//
// What is granted is computed here from the member's Works with the rule
// Push uses (applier.NeedOf with the hub's REST mapping, applier.Allowed);
// a Work refused by it gets nothing — the agent reports it AccessRefused.
// The namespaced role lists the namespaced resources the agent reported in
// status.apiEnablements whose scope the hub knows. Grants only grow while
// the member is enrolled: they are kept in the annotation
// flotilla.io/agent-grants of the ConfigMap.

const (
	agentGuardKey        = "guard.yaml"
	agentRightsKey       = "rights.yaml"
	annotationAgentGrant = "flotilla.io/agent-grants"
)

// agentRightsConfigMap names a member's agent rights ConfigMap.
func agentRightsConfigMap(member string) string { return agentAddon(member) + "-rights" }

// recordedGrant is the annotation's content.
type recordedGrant struct {
	Namespaces []string `json:"namespaces,omitempty"`
	Resources  []string `json:"resources,omitempty"`
}

// applyAgentRights writes the member's agent rights ConfigMap in the
// Cluster's namespace, owned by the Cluster.
func (r *Reconciler) applyAgentRights(ctx context.Context, s *scope) (string, error) {
	ns, name := s.cluster.Namespace, agentRightsConfigMap(s.memberName)
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cm)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("read ConfigMap %s/%s: %w", ns, name, err)
	}
	granted, err := r.agentGrant(ctx, s.memberName, cm.Annotations[annotationAgentGrant])
	if err != nil {
		return "", err
	}
	mapper := r.Client.RESTMapper()
	guard, err := manifestsOf(agentMember.guard(granted.Resources))
	if err != nil {
		return "", err
	}
	rights, err := manifestsOf(agentRights(namespacedRules(servedResources(s.member.Status.APIEnablements, mapper)), granted))
	if err != nil {
		return "", err
	}
	record, err := json.Marshal(recordOf(granted))
	if err != nil {
		return "", err
	}
	cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.uncached(), cm, func() error {
		cm.Labels = managedBy()
		setLabel(cm, clusterv1alpha1.MemberLabel, s.memberName)
		setAnnotation(cm, annotationAgentGrant, string(record))
		cm.Data = map[string]string{agentGuardKey: string(guard), agentRightsKey: string(rights)}
		return controllerutil.SetOwnerReference(s.cluster, cm, r.Client.Scheme())
	}); err != nil {
		return "", fmt.Errorf("write ConfigMap %s/%s: %w", ns, name, err)
	}
	return name, nil
}

// agentGrant is what the member's Works may be granted, with what was
// granted before (recorded).
func (r *Reconciler) agentGrant(ctx context.Context, member, recorded string) (applier.Grant, error) {
	var g applier.Grant
	if recorded != "" {
		var rec recordedGrant
		if err := json.Unmarshal([]byte(recorded), &rec); err != nil {
			return g, fmt.Errorf("decode the agent's recorded grants: %w", err)
		}
		g.Namespaces = rec.Namespaces
		for _, res := range rec.Resources {
			g.Resources = append(g.Resources, schema.ParseGroupResource(res))
		}
	}
	// From the cache, and its own objects: this runs for every new Work of
	// the member, and listing them all from the apiserver each time cost
	// it 0.2–0.6 s per list at 10,000 Works. A Work not yet in the cache
	// brings its own event, and the grant only grows.
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(member)), client.UnsafeDisableDeepCopy); err != nil {
		return g, fmt.Errorf("list the Works of member %s: %w", member, err)
	}
	needs := r.workNeeds.of(r.Client.RESTMapper(), member, works.Items)
	for i := range works.Items {
		w := &works.Items[i]
		if !w.DeletionTimestamp.IsZero() {
			continue
		}
		allowed, err := applier.Allowed(w, needs[i])
		if err != nil {
			continue // the agent reports the Work AccessRefused
		}
		for _, ns := range allowed.Namespaces {
			if !slices.Contains(g.Namespaces, ns) {
				g.Namespaces = append(g.Namespaces, ns)
			}
		}
		g.Resources = unionResources(g.Resources, allowed.Resources)
	}
	slices.Sort(g.Namespaces)
	slices.SortFunc(g.Resources, func(a, b schema.GroupResource) int { return strings.Compare(a.String(), b.String()) })
	return g, nil
}

func recordOf(g applier.Grant) recordedGrant {
	rec := recordedGrant{Namespaces: g.Namespaces}
	for _, r := range g.Resources {
		rec.Resources = append(rec.Resources, r.String())
	}
	return rec
}

// agentRights are the agent's roles, its granted role and its managed
// namespaces with their RoleBindings. flotilla-system comes first: the
// capacity Role lives there.
func agentRights(namespaced []rbacv1.PolicyRule, g applier.Grant) []client.Object {
	objs := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.SystemNamespace,
		Labels: map[string]string{"app.kubernetes.io/part-of": "flotilla"}}}}
	objs = append(objs, agentMember.roles(namespaced)...)
	objs = append(objs, agentMember.grantedRole(g.Resources))
	for _, ns := range g.Namespaces {
		objs = append(objs,
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{ManagedNamespaceLabel: "true"}}},
			agentMember.namespaceBinding(ns))
	}
	return objs
}

// servedResources turns the resources a member reported into discovery
// lists, each resource's scope told by mapper (the hub's); resources whose
// kind the hub does not know are left out.
func servedResources(enablements []clusterv1alpha1.APIEnablement, mapper meta.RESTMapper) []*metav1.APIResourceList {
	var lists []*metav1.APIResourceList
	for _, e := range enablements {
		gv, err := schema.ParseGroupVersion(e.GroupVersion)
		if err != nil {
			continue
		}
		l := &metav1.APIResourceList{GroupVersion: e.GroupVersion}
		for _, res := range e.Resources {
			m, err := mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: res.Kind}, gv.Version)
			if err != nil || m.Resource.Resource != res.Name {
				continue
			}
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: res.Name, Kind: res.Kind, Namespaced: m.Scope.Name() == meta.RESTScopeNameNamespace})
		}
		lists = append(lists, l)
	}
	return lists
}

// manifestsOf renders objects as one multi-document YAML, as a
// ClusterResourceSet applies it.
func manifestsOf(objs []client.Object) ([]byte, error) {
	var b bytes.Buffer
	for _, o := range objs {
		gvk, err := apiutil.GVKForObject(o, clientgoscheme.Scheme)
		if err != nil {
			return nil, err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, err
		}
		obj := &unstructured.Unstructured{Object: u}
		obj.SetGroupVersionKind(gvk)
		unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(obj.Object, "status")
		if spec, ok := u["spec"].(map[string]any); ok && len(spec) == 0 {
			unstructured.RemoveNestedField(obj.Object, "spec")
		}
		out, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(out)
	}
	return b.Bytes(), nil
}
