package quota_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/cli"
	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
)

// assignmentWork is the Work a static assignment of quota ns/name renders in member.
func assignmentWork(member, ns, name string) *workv1alpha1.Work {
	return &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace(member),
		Name:      bindingcontroller.WorkName("FederatedResourceQuota", ns, name),
	}}
}

// reportApplied writes what controllers/execution reports once the member
// has applied the ResourceQuota: Applied, and the object's status.
func reportApplied(t *testing.T, w *workv1alpha1.Work, status corev1.ResourceQuotaStatus) {
	t.Helper()
	raw, err := json.Marshal(status)
	must(t, err)
	var rq corev1.ResourceQuota
	must(t, json.Unmarshal(w.Spec.Workload.Manifests[0].Raw, &rq))
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{{
		Identifier: workv1alpha1.ResourceIdentifier{Version: "v1", Kind: "ResourceQuota", Resource: "resourcequotas", Namespace: rq.Namespace, Name: rq.Name},
		Applied:    true, Health: workv1alpha1.ResourceHealthy, Status: &runtime.RawExtension{Raw: raw},
	}}
	conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: workv1alpha1.WorkReasonApplied,
		Message: "applied 1 manifest", ObservedGeneration: w.Generation})
	must(t, env.Client.Status().Update(context.Background(), w))
}

func TestStaticAssignmentsPutAResourceQuotaInEachMemberAndReportItsUsage(t *testing.T) {
	fleet(t)
	ns := namespace(t, "static", true)
	q := frq(t, ns, "team", list("cpu", "10", "pods", "20"),
		policyv1alpha1.StaticClusterAssignment{ClusterName: "m1", Hard: list("cpu", "6", "pods", "10")},
		policyv1alpha1.StaticClusterAssignment{ClusterName: "m2", Hard: list("cpu", "4")})

	// One Work per assigned member carries the ResourceQuota.
	w1 := eventually(t, assignmentWork("m1", ns, "team"), "written", func(*workv1alpha1.Work) bool { return true }, func(*workv1alpha1.Work) string { return "absent" })
	w2 := eventually(t, assignmentWork("m2", ns, "team"), "written", func(*workv1alpha1.Work) bool { return true }, func(*workv1alpha1.Work) string { return "absent" })
	if len(w1.Spec.Workload.Manifests) != 1 {
		t.Fatalf("m1's Work has %d manifests, want the ResourceQuota alone", len(w1.Spec.Workload.Manifests))
	}
	var manifest map[string]any
	must(t, json.Unmarshal(w1.Spec.Workload.Manifests[0].Raw, &manifest))
	if got, _ := json.Marshal(manifest); string(got) != `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"team","namespace":"`+ns+`"},"spec":{"hard":{"cpu":"6","pods":"10"}}}` {
		t.Errorf("m1's manifest: %s", got)
	}
	if w1.Labels[clusterv1alpha1.MemberLabel] != "m1" || w1.Labels[policyv1alpha1.FederatedResourceQuotaPermanentIDLabel] != string(q.UID) {
		t.Errorf("m1's Work labels: %v", w1.Labels)
	}
	eventually(t, q, "StaticAssignmentsApplied=False/NotApplied", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		c := conditions.Get(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied)
		return c != nil && c.Reason == policyv1alpha1.QuotaReasonNotApplied && c.Message == "member m1: not applied yet; member m2: not applied yet"
	}, describeQuota)

	// The members report what their ResourceQuotas use.
	reportApplied(t, w1, corev1.ResourceQuotaStatus{Hard: list("cpu", "6", "pods", "10"), Used: list("cpu", "1500m", "pods", "3")})
	reportApplied(t, w2, corev1.ResourceQuotaStatus{Hard: list("cpu", "4"), Used: list("cpu", "0")})
	eventually(t, q, "aggregatedStatus from the members and StaticAssignmentsApplied=True", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		c := conditions.Get(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied)
		return c != nil && c.Status == metav1.ConditionTrue && c.Message == "ResourceQuota "+ns+"/team applied on m1, m2" &&
			len(q.Status.AggregatedStatus) == 2 &&
			q.Status.AggregatedStatus[0].ClusterName == "m1" && render(q.Status.AggregatedStatus[0].Used) == "cpu=1500m pods=3" &&
			render(q.Status.AggregatedStatus[0].Hard) == "cpu=6 pods=10" &&
			q.Status.AggregatedStatus[1].ClusterName == "m2" && render(q.Status.AggregatedStatus[1].Used) == "cpu=0"
	}, describeQuota)

	// kubectl flotilla quota shows used / overall per key and per member.
	out := runCLI(t, "quota", "-n", ns)
	for _, want := range []string{
		`^NAMESPACE +QUOTA +KEY +USED +OVERALL +LEFT +MEMBERS \(USED/HARD\)$`,
		`^` + ns + ` +team +cpu +0 +10 +10 +m1=1500m/6, m2=0/4$`,
		`^` + ns + ` +team +pods +0 +20 +20 +m1=3/10$`,
	} {
		if !regexp.MustCompile(`(?m)` + want).MatchString(out) {
			t.Errorf("kubectl flotilla quota: no line matching %q in\n%s", want, out)
		}
	}

	// An assignment that goes takes its Work (and so the member's ResourceQuota) with it;
	// one to a member that does not exist is reported.
	before := q.DeepCopy()
	q.Spec.StaticAssignments = []policyv1alpha1.StaticClusterAssignment{
		{ClusterName: "m1", Hard: list("cpu", "6", "pods", "10")},
		{ClusterName: "m9", Hard: list("cpu", "1")},
	}
	must(t, env.Client.Patch(context.Background(), q, client.MergeFrom(before)))
	waitGone(t, assignmentWork("m2", ns, "team"))
	eventually(t, q, "StaticAssignmentsApplied=False/MemberNotFound", func(q *policyv1alpha1.FederatedResourceQuota) bool {
		c := conditions.Get(q, policyv1alpha1.QuotaConditionStaticAssignmentsApplied)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == policyv1alpha1.QuotaReasonMemberNotFound && c.Message == "member m9: no member named m9"
	}, describeQuota)
	waitEvent(t, ns, "team", "StaticAssignmentFailed", "member m9: no member named m9")

	// Deleting the quota removes its Works first.
	must(t, env.Client.Delete(context.Background(), q))
	waitGone(t, assignmentWork("m1", ns, "team"))
	waitGone(t, q)
}

// waitGone waits until obj is deleted.
func waitGone(t *testing.T, obj client.Object) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%T %s/%s still there after %v (err %v)", obj, obj.GetNamespace(), obj.GetName(), timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kubeconfig writes the test apiserver's admin credentials for the CLI.
func kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: env.Config.CertData, ClientKeyData: env.Config.KeyData}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "admin", Namespace: "default"}
	cfg.CurrentContext = "hub"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

func runCLI(t *testing.T, args ...string) string {
	t.Helper()
	cmd := cli.NewRootCommand()
	out := &bytes.Buffer{}
	cmd.SetOut(out)
	cmd.SetErr(out)
	cmd.SetArgs(append(args, "--kubeconfig", kubeconfig(t)))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("kubectl flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out.String()
}
