package enrolment

import (
	"fmt"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"

	utilyaml "sigs.k8s.io/cluster-api/util/yaml"

	"github.com/flotilla-io/flotilla/controllers/applier"
)

// The agent gets the hub identity's rules on its own username, rendered as
// the ClusterResourceSet applies them.
func TestAgentRightsAreTheHubIdentitysRulesOnTheAgentsUsername(t *testing.T) {
	namespaced := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: hubVerbs}}
	grant := applier.Grant{Namespaces: []string{"shop"}, Resources: []schema.GroupResource{{Group: "scheduling.k8s.io", Resource: "priorityclasses"}}}
	guard, err := manifestsOf(agentMember.guard(grant.Resources))
	if err != nil {
		t.Fatal(err)
	}
	rights, err := manifestsOf(agentRights(namespaced, grant))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := utilyaml.ToUnstructured(append(append(guard, '\n'), rights...))
	if err != nil {
		t.Fatalf("the rights do not parse as Cluster API parses them: %v", err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
	}
	want := []string{
		"ValidatingAdmissionPolicy /flotilla-agent", "ValidatingAdmissionPolicyBinding /flotilla-agent",
		"Namespace /flotilla-system",
		"ClusterRole /flotilla-agent", "ClusterRoleBinding /flotilla-agent",
		"ClusterRole /flotilla-agent-namespaced", "ClusterRoleBinding /flotilla-agent-granted",
		"Role flotilla-system/flotilla-agent-capacity", "RoleBinding flotilla-system/flotilla-agent-capacity",
		"ClusterRole /flotilla-agent-granted",
		"Namespace /shop", "RoleBinding shop/flotilla-agent",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rights\n%v\nwant\n%v", got, want)
	}
	if _, found := objs[0].Object["spec"]; !found {
		t.Errorf("the admission policy lost its spec in rendering")
	}
	if objs[10].GetLabels()[ManagedNamespaceLabel] != "true" {
		t.Errorf("namespace shop labels %v, want %s=true", objs[10].GetLabels(), ManagedNamespaceLabel)
	}

	hubPolicy := hubMember.guard(grant.Resources)[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	agentPolicy := agentMember.guard(grant.Resources)[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if !equality.Semantic.DeepEqual(hubPolicy.Spec.Validations, agentPolicy.Spec.Validations) {
		t.Errorf("the agent's admission rules differ from the hub identity's")
	}
	if m := agentPolicy.Spec.MatchConditions; len(m) != 1 || m[0].Expression != `request.userInfo.username == "system:serviceaccount:flotilla-system:flotilla-agent"` {
		t.Errorf("agent policy matches %+v, want the agent's username", m)
	}
	for _, o := range agentMember.roles(namespaced) {
		role, ok := o.(*rbacv1.ClusterRole)
		if !ok || role.Name != "flotilla-agent" {
			continue
		}
		if !equality.Semantic.DeepEqual(role.Rules, baseRules()) {
			t.Errorf("the agent's cluster-wide role %+v, want read-only %+v", role.Rules, baseRules())
		}
	}
	if sub := agentMember.namespaceBinding("shop").Subjects; len(sub) != 1 || sub[0].Namespace != "flotilla-system" || sub[0].Name != "flotilla-agent" {
		t.Errorf("namespace binding subjects %+v, want the agent's ServiceAccount", sub)
	}
}
