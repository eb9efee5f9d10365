package clusterctl_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-io/flotilla/clusterctl/release"
	quotacontroller "github.com/flotilla-io/flotilla/controllers/quota"
	"github.com/flotilla-io/flotilla/test/freeport"
	"github.com/flotilla-io/flotilla/webhooks"
)

// How long the manager runs after it leads before its log is searched for
// refused requests: its controllers' informers list and watch at once.
const settle = 5 * time.Second

// flotilla-manager, run as a local process with the released Deployment's
// arguments and as its ServiceAccount (bound to the released ClusterRole and
// leader-election Role), starts against a hub holding Cluster API's and
// Flotilla's CRDs: every argument is a flag it has, it takes the leader
// Lease in its namespace, reports ready, and no request of it is forbidden.
// Only the listen addresses and the certificate folder, which a Pod gets
// from its own network and volume, are changed.
func TestManagerRunsWithTheReleasedArgumentsAndRBAC(t *testing.T) {
	manager := filepath.Join(repoRoot, "bin", "flotilla-manager")
	if _, err := os.Stat(manager); err != nil {
		t.Fatalf("%s not found: run `make build` first", manager)
	}
	api := startAPIServer(t)
	api.installCRDs(t, append(certManagerStandIns(), crdsFromFiles(t, filepath.Join(repoRoot, "bin", "capi-crds", "*.yaml"))...))
	a := writeRelease(t, "ghcr.io/flotilla-io", "dev")
	objs := renderDefaults(t, a.Components)
	var crds, rest []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" || o.GetKind() == "Namespace" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	api.apply(t, crds)
	for _, o := range crds {
		if o.GetKind() == "CustomResourceDefinition" {
			waitEstablished(t, api, o.GetName())
		}
	}
	api.apply(t, rest)

	var deployment *unstructured.Unstructured
	for i := range objs {
		if objs[i].GetKind() == "Deployment" && objs[i].GetName() == "flotilla-manager" {
			deployment = &objs[i]
		}
	}
	if deployment == nil {
		t.Fatal("the components hold no Deployment flotilla-manager")
	}
	args, serviceAccount := managerArgs(t, deployment)

	dir := t.TempDir()
	kubeconfig := api.serviceAccountKubeconfig(t, release.Namespace, serviceAccount, dir)
	certDir := filepath.Join(dir, "certs")
	writeServingCert(t, certDir)
	ports := freePorts(t, 2)
	health := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args = replaceFlags(args, map[string]string{
		"--health-probe-bind-address": health,
		"--metrics-bind-address":      "0",
		"--webhook-port":              fmt.Sprint(ports[1]),
		"--webhook-cert-dir":          certDir,
	})
	// Out of a Pod, the manager cannot find its own namespace.
	args = append(args, "--leader-election-namespace="+release.Namespace, "--kubeconfig="+kubeconfig)

	log := runManager(t, manager, args)
	ctx := ctxFor(t, 90*time.Second)
	waitFor(t, log, "the manager to take the leader Lease flotilla-manager in "+release.Namespace, func() bool {
		lease := &coordinationv1.Lease{}
		err := api.client.Get(ctx, client.ObjectKey{Namespace: release.Namespace, Name: "flotilla-manager"}, lease)
		return err == nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != ""
	})
	waitFor(t, log, "/readyz on "+health, func() bool {
		resp, err := http.Get("http://" + health + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	time.Sleep(settle)
	if exited := log.exited(); exited != "" {
		t.Fatalf("flotilla-manager exited: %s\n%s\nfull output:\n%s", exited, log.errors(), log.String())
	}
	forbidden := regexp.MustCompile(`(?i).*\bforbidden\b.*`).FindAllString(log.String(), 20)
	if len(forbidden) > 0 {
		t.Errorf("requests of flotilla-manager as system:serviceaccount:%s:%s are forbidden; add +kubebuilder:rbac markers:\n%s",
			release.Namespace, serviceAccount, strings.Join(forbidden, "\n"))
	}
	managerScopedItsQuotaWarnings(t, api)
	managerIsConfinedToClaimsAndItsOwnObjects(t, api, kubeconfig)
}

// managerScopedItsQuotaWarnings: the released manager, under its admission
// policy, keeps its quota warning webhooks to the namespaces holding a
// FederatedResourceQuota (none here).
func managerScopedItsQuotaWarnings(t *testing.T, api *apiserver) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := api.client.Get(ctxFor(t, 10*time.Second), client.ObjectKey{Name: quotacontroller.DefaultWebhookConfiguration}, cfg); err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Webhooks {
		if !slices.Contains(webhooks.WorkloadQuotaWebhooks, w.Name) {
			continue
		}
		want := quotacontroller.ScopedSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"flotilla.io/federated": "true"}}, nil)
		if !equality.Semantic.DeepEqual(w.NamespaceSelector, want) {
			t.Errorf("webhook %s: namespaceSelector %v, want %v", w.Name, w.NamespaceSelector, want)
		}
	}
}

// managerIsConfinedToClaimsAndItsOwnObjects makes requests as the manager's
// ServiceAccount, with the released ClusterRole and admission policies: its
// wide verbs reach only claims on templates and its own objects.
func managerIsConfinedToClaimsAndItsOwnObjects(t *testing.T, api *apiserver, kubeconfig string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	m, err := client.New(cfg, client.Options{Scheme: api.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)
	for _, ns := range []string{"tenant", "flotilla-es-m1"} {
		if err := api.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); client.IgnoreAlreadyExists(err) != nil {
			t.Fatal(err)
		}
	}
	tmpl := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "settings", Labels: map[string]string{"app": "shop"}}, Data: map[string]string{"k": "v"}}
	if err := api.client.Create(ctx, tmpl); err != nil {
		t.Fatal(err)
	}
	envelope := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.flotilla.io/v1alpha1", "kind": "ClusterResourceEnvelope",
		"metadata": map[string]any{"name": "admission"},
		"data":     map[string]any{"role": map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "reader"}}},
	}}
	if err := api.client.Create(ctx, envelope); err != nil {
		t.Fatal(err)
	}
	merge := func(p string) client.Patch { return client.RawPatch("application/merge-patch+json", []byte(p)) }
	allowed := map[string]error{
		"record a claim on a template":                m.Patch(ctx, tmpl, merge(`{"metadata":{"labels":{"propagationpolicy.flotilla.io/permanent-id":"u"},"annotations":{"propagationpolicy.flotilla.io/name":"p","propagationpolicy.flotilla.io/namespace":"tenant"}}}`)),
		"record a claim on a ClusterResourceEnvelope": m.Patch(ctx, envelope.DeepCopy(), merge(`{"metadata":{"labels":{"clusterpropagationpolicy.flotilla.io/permanent-id":"u"},"annotations":{"clusterpropagationpolicy.flotilla.io/name":"p"}}}`)),
		"write a Secret in an execution namespace":    m.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flotilla-es-m1", Name: "flotilla-agent-token"}}),
	}
	for what, err := range allowed {
		if err != nil {
			t.Errorf("flotilla-manager cannot %s: %v", what, err)
		}
	}
	// Admission (flotilla-manager-writes) or RBAC refuse the rest.
	refused := map[string]error{
		"change a template's data":                    m.Patch(ctx, tmpl, merge(`{"data":{"k":"evil"}}`)),
		"change a ClusterResourceEnvelope's contents": m.Patch(ctx, envelope.DeepCopy(), merge(`{"data":{"role":{"metadata":{"name":"evil"}}}}`)),
		"create a ClusterResourceEnvelope": m.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "policy.flotilla.io/v1alpha1", "kind": "ClusterResourceEnvelope", "metadata": map[string]any{"name": "planted"}}}),
		"change a template's own labels":         m.Patch(ctx, tmpl, merge(`{"metadata":{"labels":{"app":"evil"}}}`)),
		"patch kube-system's labels":             m.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}, merge(`{"metadata":{"labels":{"x":"y"}}}`)),
		"write a Secret in a tenant namespace":   m.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant", Name: "planted"}}),
		"create a ServiceAccount in kube-system": m.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "planted"}}),
		"delete a tenant namespace":              m.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant"}}),
		"create a namespace":                     m.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "planted"}}),
		"bind cluster-admin": m.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "planted"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: release.Namespace, Name: "flotilla-manager"}}}),
	}
	for what, err := range refused {
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			t.Errorf("flotilla-manager can %s: got %v, want Forbidden", what, err)
		}
	}
}

// managerArgs are the arguments of the Deployment's container "manager"
// and the Pod's ServiceAccount.
func managerArgs(t *testing.T, d *unstructured.Unstructured) ([]string, string) {
	t.Helper()
	var pod corev1.PodSpec
	spec, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(spec, &pod); err != nil {
		t.Fatal(err)
	}
	for _, c := range pod.Containers {
		if c.Name == "manager" {
			if len(c.Command) > 0 {
				t.Errorf("container manager sets command %v; the image's entrypoint is the manager", c.Command)
			}
			return append([]string(nil), c.Args...), pod.ServiceAccountName
		}
	}
	t.Fatal("Deployment flotilla-manager has no container named manager")
	return nil, ""
}

// replaceFlags sets --flag=value for each flag, replacing the Deployment's.
func replaceFlags(args []string, values map[string]string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(a, "=")
		if _, ok := values[name]; !ok {
			out = append(out, a)
		}
	}
	for name, v := range values {
		out = append(out, name+"="+v)
	}
	return out
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// ServiceAccount, with a token from the TokenRequest API.
func (a *apiserver) serviceAccountKubeconfig(t *testing.T, namespace, name, dir string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{}
	ctx := ctxFor(t, 30*time.Second)
	if err := a.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sa); err != nil {
		t.Fatalf("ServiceAccount %s/%s of the Deployment: %v", namespace, name, err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}
	if err := a.client.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("token for %s/%s: %v", namespace, name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["hub"] = &clientcmdapi.Cluster{Server: a.config.Host, CertificateAuthorityData: a.config.CAData}
	cfg.AuthInfos["manager"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["manager"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: "manager"}
	cfg.CurrentContext = "manager"
	path := filepath.Join(dir, "manager.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeServingCert(t *testing.T, dir string) {
	t.Helper()
	crt, key, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := freeport.Loopback(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// processLog collects a process's output and how it ended.
type processLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	done string
}

func (l *processLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *processLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// errors are the lines that say why a process stopped: flag errors and
// errors logged.
func (l *processLog) errors() string {
	lines := regexp.MustCompile(`(?m)^.*(unknown flag|invalid argument|bad flag|^E\d{4} ).*$`).FindAllString(l.String(), 10)
	return strings.Join(lines, "\n")
}

func (l *processLog) exited() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.done
}

// runManager starts the binary in its own process group, killed with the
// test process, and stops it when the test ends.
func runManager(t *testing.T, binary string, args []string) *processLog {
	t.Helper()
	log := &processLog{}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		log.mu.Lock()
		log.done = fmt.Sprint("exit: ", err)
		log.mu.Unlock()
		close(done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() || os.Getenv("FLOTILLA_TEST_LOG") != "" {
			t.Logf("flotilla-manager output:\n%s", log.String())
		}
	})
	return log
}

func waitFor(t *testing.T, log *processLog, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		if exited := log.exited(); exited != "" {
			t.Fatalf("flotilla-manager exited while waiting for %s: %s\n%s\nfull output:\n%s", what, exited, log.errors(), log.String())
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
