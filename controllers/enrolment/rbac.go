package enrolment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The hub identity's permissions in a member.
//
// Works carry arbitrary objects, so the hub needs to read and write every
// kind the member serves — and nothing that grants more power than that.
// RBAC cannot subtract, so the ClusterRole lists, per API group, every
// top-level resource the member's discovery reports, with the verbs get,
// list, watch, create, update, patch and delete. By construction it lacks:
//   - the verbs bind, escalate and impersonate: the apiserver's escalation
//     check then refuses any Role or binding granting more than the hub holds
//     (e.g. binding cluster-admin), and the hub cannot act as another user;
//   - every subresource: no pods/exec, attach or portforward, no nodes/proxy
//     (the kubelet API), no serviceaccounts/token (minting tokens), no CSR
//     approval, no eviction;
//   - deletecollection.
//
// Known limits, accepted for now: the hub can read Secrets in every namespace
// including kube-system (Works carry Secrets, and RBAC cannot exclude one
// namespace from a cluster-wide grant), and whoever can create Pods in a
// namespace can run them as that namespace's ServiceAccounts. A CRD added to
// the member later changes the discovery and therefore the rules' hash;
// enrolment then re-applies the ClusterRole with CAPI's admin kubeconfig.
var hubVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}

// hubRules are the identity's rules for the resources a member serves.
func hubRules(lists []*metav1.APIResourceList) []rbacv1.PolicyRule {
	byGroup := map[string][]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || slices.Contains(byGroup[gv.Group], res.Name) {
				continue
			}
			byGroup[gv.Group] = append(byGroup[gv.Group], res.Name)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	rules := make([]rbacv1.PolicyRule, 0, len(groups))
	for _, g := range groups {
		resources := byGroup[g]
		slices.Sort(resources)
		rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{g}, Resources: resources, Verbs: hubVerbs})
	}
	return rules
}

// rulesHash identifies a rule set, to tell when the member's API changed.
func rulesHash(rules []rbacv1.PolicyRule) string {
	b, _ := json.Marshal(rules)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
