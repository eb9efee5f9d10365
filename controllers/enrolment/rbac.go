package enrolment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"sigs.k8s.io/controller-runtime/pkg/client"

	agentmanifests "github.com/flotilla-io/flotilla/addon/agent/manifests"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// The permissions of a member identity (memberIdentity: the hub's
// ServiceAccount flotilla-system/flotilla-hub in a Push-mode member,
// flotilla-system/flotilla-agent in a Pull-mode one; roles named after it,
// shown here for the hub's), least privilege:
//
//   - ClusterRole/Binding flotilla-hub: read Namespaces and Nodes, nothing
//     else cluster-wide.
//   - Role/RoleBinding flotilla-hub-capacity in flotilla-system: get the
//     estimator's ConfigMap.
//   - ClusterRole flotilla-hub-namespaced: every namespaced top-level
//     resource the member's discovery reports, grouped by API group, with
//     get, list, watch, create, update, patch and delete — bound only by a
//     RoleBinding flotilla-hub in each namespace Flotilla manages there
//     (managed namespaces, see access.go), so it grants nothing elsewhere.
//     It leaves out RBAC (roles, rolebindings) and core "bindings"
//     (assigning Pods to Nodes).
//   - ClusterRole/Binding flotilla-hub-granted: the cluster-scoped kinds (and
//     namespaced RBAC kinds) that ClusterResourceBindings propagate to the
//     member, added as Works need them (access.go); empty at enrolment.
//   - ValidatingAdmissionPolicy/Binding flotilla-hub, matched on the
//     identity's username, for what RBAC cannot say: no
//     service-account-token Secrets anywhere, no namespaced write outside
//     managed namespaces (and never in kube-system, kube-public,
//     kube-node-lease or flotilla-system), no RBAC object or webhook
//     configuration unless granted.
//
// By construction no role holds bind, escalate or impersonate (the
// apiserver's escalation check then refuses a binding that grants more than
// the identity holds), any subresource (no pods/exec, serviceaccounts/token,
// nodes/proxy, eviction, CSR approval) or deletecollection.
var hubVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

const (
	// Suffixes of an identity's roles: namespacedSuffix is bound in each
	// managed namespace, grantedSuffix holds the kinds granted on demand,
	// capacitySuffix reads the estimator's ConfigMap in flotilla-system.
	namespacedSuffix = "-namespaced"
	grantedSuffix    = "-granted"
	capacitySuffix   = "-capacity"

	// identityLayout changes the rules' hash when the identity's shape
	// changes, so that an upgraded manager rewrites older identities.
	identityLayout = "least-privilege/v1"
)

// ManagedNamespaceLabel marks a member namespace in which the hub identity
// (or the agent) may write: set by enrolment with CAPI's admin credentials
// when it binds the identity there. The admission policy refuses namespaced
// writes elsewhere.
const ManagedNamespaceLabel = "flotilla.io/managed-namespace"

// reservedNamespaces and sensitiveGroups are the applier's rule of what a
// Work may need (applier.Allowed), which the admission policy enforces too.
var (
	reservedNamespaces = applier.ReservedNamespaces
	sensitiveGroups    = applier.SensitiveGroups
)

// memberIdentity is a ServiceAccount that writes Works' objects in a member:
// the hub's (Push mode, set up and widened by enrolment with CAPI's admin
// kubeconfig) or flotilla-agent's (Pull mode, whose rights travel through
// its ClusterResourceSet). Both get the same roles and admission policy,
// named after the ServiceAccount.
type memberIdentity struct{ namespace, name string }

var (
	hubMember   = memberIdentity{namespace: clusterv1alpha1.SystemNamespace, name: hubIdentity}
	agentMember = memberIdentity{namespace: clusterv1alpha1.SystemNamespace, name: agentmanifests.ServiceAccount}
)

func (i memberIdentity) username() string { return serviceAccountUser(i.namespace, i.name) }

func (i memberIdentity) subjects() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: i.namespace, Name: i.name}}
}

// roles are the identity's roles and bindings but the granted role's
// content (grantedRole): base and namespaced ClusterRoles, the bindings of
// the base and granted roles, and the capacity Role and binding.
func (i memberIdentity) roles(namespaced []rbacv1.PolicyRule) []client.Object {
	meta := func(namespace, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: managedBy()}
	}
	clusterRef := func(name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}
	}
	capacity := i.name + capacitySuffix
	return []client.Object{
		&rbacv1.ClusterRole{ObjectMeta: meta("", i.name), Rules: baseRules()},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", i.name), Subjects: i.subjects(), RoleRef: clusterRef(i.name)},
		&rbacv1.ClusterRole{ObjectMeta: meta("", i.name+namespacedSuffix), Rules: namespaced},
		&rbacv1.ClusterRoleBinding{ObjectMeta: meta("", i.name+grantedSuffix), Subjects: i.subjects(), RoleRef: clusterRef(i.name + grantedSuffix)},
		&rbacv1.Role{ObjectMeta: meta(clusterv1alpha1.SystemNamespace, capacity), Rules: capacityRules()},
		&rbacv1.RoleBinding{ObjectMeta: meta(clusterv1alpha1.SystemNamespace, capacity), Subjects: i.subjects(),
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: capacity}},
	}
}

// grantedRole is the identity's role holding the kinds granted to it.
func (i memberIdentity) grantedRole(resources []schema.GroupResource) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: i.name + grantedSuffix, Labels: managedBy()}, Rules: grantedRules(resources)}
}

// namespaceBinding binds the identity's namespaced role in a managed
// namespace.
func (i memberIdentity) namespaceBinding(ns string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: i.name, Labels: managedBy()},
		Subjects:   i.subjects(),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: i.name + namespacedSuffix},
	}
}

// guard is the identity's admission policy and its binding, letting the
// sensitive kinds granted through.
func (i memberIdentity) guard(granted []schema.GroupResource) []client.Object {
	policy, binding := guardPolicy(i.name, i.username(), granted)
	policy.Labels, binding.Labels = managedBy(), managedBy()
	return []client.Object{policy, binding}
}

// baseRules are the identity's cluster-wide rules.
func baseRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces", "nodes"}, Verbs: []string{"get", "list", "watch"}}}
}

// capacityRules read the estimator's ConfigMap, which doubles as the check
// that the identity still has its RBAC.
func capacityRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
		ResourceNames: []string{clusterv1alpha1.CapacityModelConfigMap}, Verbs: []string{"get"}}}
}

// namespacedRules are the rules of an identity's namespaced role
// (flotilla-hub-namespaced, flotilla-agent-namespaced) for the namespaced
// resources a member serves.
func namespacedRules(lists []*metav1.APIResourceList) []rbacv1.PolicyRule {
	return groupRules(lists, func(group string, res metav1.APIResource) bool {
		if !res.Namespaced || slices.Contains(sensitiveGroups, group) {
			return false
		}
		return group != "" || res.Name != "bindings"
	})
}

// groupRules lists, per API group, the top-level resources keep accepts.
func groupRules(lists []*metav1.APIResourceList, keep func(group string, res metav1.APIResource) bool) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || slices.Contains(byGroup[gv.Group], res.Name) || !keep(gv.Group, res) {
				continue
			}
			byGroup[gv.Group] = append(byGroup[gv.Group], res.Name)
		}
	}
	return rulesOf(byGroup)
}

func rulesOf(byGroup map[string][]string) []rbacv1.PolicyRule {
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		resources := slices.Clone(byGroup[g])
		slices.Sort(resources)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: slices.Compact(resources), Verbs: hubVerbs})
	}
	return rules
}

// grantedResources reads the group resources a granted role holds.
func grantedResources(rules []rbacv1.PolicyRule) []schema.GroupResource {
	var out []schema.GroupResource
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				out = append(out, schema.GroupResource{Group: g, Resource: res})
			}
		}
	}
	return out
}

// grantedRules are the rules of a granted role holding resources. Granted
// RBAC kinds come with the verb that lets the identity write them as
// propagated: escalate for roles and clusterroles, bind for their bindings
// (otherwise the member's escalation check refuses any role granting more
// than the identity holds). Propagating ClusterRoleBindings therefore hands
// the identity cluster-admin potential: a cluster admin's decision, made by
// a ClusterPropagationPolicy.
func grantedRules(resources []schema.GroupResource) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, gr := range resources {
		byGroup[gr.Group] = append(byGroup[gr.Group], gr.Resource)
	}
	rules := rulesOf(byGroup)
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		if r.APIGroups[0] != rbacv1.GroupName {
			out = append(out, r)
			continue
		}
		var plain, roles, bindings []string
		for _, res := range r.Resources {
			switch res {
			case "roles", "clusterroles":
				roles = append(roles, res)
			case "rolebindings", "clusterrolebindings":
				bindings = append(bindings, res)
			default:
				plain = append(plain, res)
			}
		}
		for _, part := range []struct {
			resources []string
			extra     string
		}{{plain, ""}, {roles, "escalate"}, {bindings, "bind"}} {
			if len(part.resources) == 0 {
				continue
			}
			verbs := hubVerbs
			if part.extra != "" {
				verbs = append(slices.Clone(hubVerbs), part.extra)
			}
			out = append(out, rbacv1.PolicyRule{APIGroups: r.APIGroups, Resources: part.resources, Verbs: verbs})
		}
	}
	return out
}

// rulesHash identifies a rule set, to tell when the member's API changed.
func rulesHash(rules []rbacv1.PolicyRule) string {
	b, _ := json.Marshal(rules)
	sum := sha256.Sum256(append([]byte(identityLayout), b...))
	return hex.EncodeToString(sum[:])[:16]
}

// guardPolicy is the admission policy that confines username (the hub
// identity or the agent) in a member beyond what RBAC can express; granted
// lists the sensitive kinds ClusterResourceBindings propagate there.
func guardPolicy(name, username string, granted []schema.GroupResource) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	quote := func(ss []string) string {
		q := make([]string, 0, len(ss))
		for _, s := range ss {
			q = append(q, strconv.Quote(s))
		}
		return "[" + strings.Join(q, ", ") + "]"
	}
	var grants []string
	for _, gr := range granted {
		grants = append(grants, gr.Group+"/"+gr.Resource)
	}
	slices.Sort(grants)
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update, admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "identity", Expression: "request.userInfo.username == " + strconv.Quote(username)}},
			Validations: []admissionregistrationv1.Validation{
				{
					Expression: "!(request.resource.group == '' && request.resource.resource == 'secrets') || request.operation == 'DELETE' || " +
						"!has(object.type) || object.type != 'kubernetes.io/service-account-token'",
					Message: "this identity may not create or change Secrets of type kubernetes.io/service-account-token (it must not mint ServiceAccount tokens)",
					Reason:  ptrTo(metav1.StatusReasonForbidden),
				},
				{
					Expression: "!has(request.namespace) || request.namespace == '' || (request.resource.group == '' && request.resource.resource == 'namespaces') || " +
						"(!(request.namespace in " + quote(reservedNamespaces) + ") && namespaceObject != null && has(namespaceObject.metadata.labels) && " +
						"namespaceObject.metadata.labels[?" + strconv.Quote(ManagedNamespaceLabel) + "].orValue('') == 'true')",
					MessageExpression: "'this identity writes only in namespaces Flotilla manages in this member (labelled " + ManagedNamespaceLabel + "=true); ' + request.namespace + ' is not one'",
					Reason:            ptrTo(metav1.StatusReasonForbidden),
				},
				{
					Expression: "!(request.resource.group in " + quote(sensitiveGroups) + ") || (request.resource.group + '/' + request.resource.resource) in " + quote(grants),
					MessageExpression: "'this identity writes ' + request.resource.resource + '.' + request.resource.group + " +
						"' only when a ClusterPropagationPolicy propagates that kind to this member'",
					Reason: ptrTo(metav1.StatusReasonForbidden),
				},
			},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	return policy, binding
}

// servesAdmissionPolicies tells whether a member serves
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy (GA in 1.30),
// without which the identity cannot be confined.
func servesAdmissionPolicies(lists []*metav1.APIResourceList) error {
	for _, l := range lists {
		if l.GroupVersion != admissionregistrationv1.SchemeGroupVersion.String() {
			continue
		}
		for _, r := range l.APIResources {
			if r.Name == "validatingadmissionpolicies" {
				for _, b := range l.APIResources {
					if b.Name == "validatingadmissionpolicybindings" {
						return nil
					}
				}
			}
		}
	}
	return fmt.Errorf("the member does not serve %s ValidatingAdmissionPolicy (Kubernetes 1.30 or later): the hub identity could not be kept from minting ServiceAccount tokens", admissionregistrationv1.SchemeGroupVersion)
}
