package quota_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	quotacontroller "github.com/flotilla-io/flotilla/controllers/quota"
	"github.com/flotilla-io/flotilla/test/testenv"
	"github.com/flotilla-io/flotilla/webhooks"
)

// managerUser is who the warning scope runs as in these tests: the
// manager's ServiceAccount, bound to the ClusterRole `make generate` writes
// to config/rbac/role.yaml and under the release's flotilla-manager-writes
// admission policy, so the scope is tested with exactly the rights a
// release grants the manager.
const managerUser = "system:serviceaccount:flotilla-system:flotilla-manager"

// grantManagerRights installs the release's ClusterRole, bound to
// managerUser, and the flotilla-manager-writes admission policy.
func grantManagerRights(ctx context.Context) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		return err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		return fmt.Errorf("config/rbac/role.yaml: %w", err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "flotilla-system", Name: "flotilla-manager"}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, obj); err != nil {
			return err
		}
	}
	_, err = testenv.InstallAdmissionPolicies(ctx, env.Client, "manager_writes.yaml")
	return err
}

// managerConfig is env.Config impersonating managerUser.
func managerConfig() *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: managerUser}
	return cfg
}

// startWebhookScope runs the quota warning scope as flotilla-manager runs
// it: its own cache narrowed to the configuration's name, with the
// release's rights.
func startWebhookScope(ctx context.Context) error {
	if err := grantManagerRights(ctx); err != nil {
		return err
	}
	obj, byObject := quotacontroller.WebhookConfigurationCache(quotacontroller.DefaultWebhookConfiguration)
	mgr, err := ctrl.NewManager(managerConfig(), ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{ByObject: map[client.Object]cache.ByObject{obj: byObject}},
	})
	if err != nil {
		return err
	}
	if err := (&quotacontroller.WebhookScope{Client: mgr.GetClient()}).SetupWithManager(mgr, controller.Options{}); err != nil {
		return err
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "the quota warning scope stopped:", err)
		}
	}()
	// Tests start once the scope has been written: before that every
	// federated namespace's templates call the warning webhook.
	deadline := time.Now().Add(timeout)
	for {
		cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := env.Client.Get(ctx, types.NamespacedName{Name: quotacontroller.DefaultWebhookConfiguration}, cfg); err != nil {
			return err
		}
		scoped := 0
		for _, w := range cfg.Webhooks {
			if slices.Contains(webhooks.WorkloadQuotaWebhooks, w.Name) && scopedTo(w.NamespaceSelector, "") {
				scoped++
			}
		}
		if scoped == len(webhooks.WorkloadQuotaWebhooks) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the quota warning webhooks were not scoped within %s: %v", timeout, cfg.Webhooks)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warningSelectors are the namespaceSelectors of the quota warning webhooks now.
func warningSelectors(t *testing.T) (*admissionregistrationv1.ValidatingWebhookConfiguration, []*metav1.LabelSelector) {
	t.Helper()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	must(t, env.Client.Get(context.Background(), types.NamespacedName{Name: quotacontroller.DefaultWebhookConfiguration}, cfg))
	var selectors []*metav1.LabelSelector
	for _, w := range cfg.Webhooks {
		if slices.Contains(webhooks.WorkloadQuotaWebhooks, w.Name) {
			selectors = append(selectors, w.NamespaceSelector)
		}
	}
	if len(selectors) != len(webhooks.WorkloadQuotaWebhooks) {
		t.Fatalf("%s holds %d of the warning webhooks %v", cfg.Name, len(selectors), webhooks.WorkloadQuotaWebhooks)
	}
	return cfg, selectors
}

// scopedTo tells whether selector names ns in its metadata.name requirement.
func scopedTo(selector *metav1.LabelSelector, ns string) bool {
	if selector == nil {
		return false
	}
	for _, e := range selector.MatchExpressions {
		if e.Key == "kubernetes.io/metadata.name" && e.Operator == metav1.LabelSelectorOpIn && slices.Contains(e.Values, ns) {
			return true
		}
	}
	return false
}

// waitScope waits until every warning webhook's selector names ns (in), or
// none does (!in).
func waitScope(t *testing.T, ns string, in bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_, selectors := warningSelectors(t)
		done := true
		for _, s := range selectors {
			done = done && scopedTo(s, ns) == in
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("warning webhooks scoped to %s: want %v; selectors %v", ns, in, selectors)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warningCalls is how many admission requests the quota warning webhook
// has served: testenv serves the webhooks in this process, instrumented in
// controller-runtime's registry.
func warningCalls(t *testing.T) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	must(t, err)
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_webhook_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "webhook" && l.GetValue() == webhooks.WorkloadQuotaPath {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestTemplatesCallTheWarningWebhookOnlyWhereAQuotaIs: a Deployment written
// to a federated namespace without a FederatedResourceQuota is admitted
// without a call to the manager; once the namespace holds a quota its
// templates are checked (and warned about), and not any more once the
// quota is gone.
func TestTemplatesCallTheWarningWebhookOnlyWhereAQuotaIs(t *testing.T) {
	ctx := context.Background()
	c, w := warningClient(t)
	ns := namespace(t, "scope", true)
	create := func(name string) {
		t.Helper()
		d := deployment(ns, name, 5, "1")
		must(t, c.Create(ctx, d))
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), d) })
	}

	before := warningCalls(t)
	create("before-the-quota")
	if after := warningCalls(t); after != before {
		t.Errorf("a template of a namespace without a quota called the warning webhook: %v calls, want %v", after, before)
	}
	expectWarnings(t, w, "apply where no quota is")

	q := frq(t, ns, "team", list("cpu", "1"))
	waitScope(t, ns, true)
	before = warningCalls(t)
	create("under-the-quota")
	if after := warningCalls(t); after != before+1 {
		t.Errorf("a template of a namespace with a quota: %v warning webhook calls, want %v", after, before+1)
	}
	expectWarnings(t, w, "apply 5 × 1 CPU where 1 CPU is the quota", "FederatedResourceQuota "+ns+"/team: cpu: requested 5, used 0 of 1, 1 left"+admittedNote)

	must(t, env.Client.Delete(ctx, q))
	waitScope(t, ns, false)
	before = warningCalls(t)
	create("after-the-quota")
	if after := warningCalls(t); after != before {
		t.Errorf("a template of a namespace whose quota is gone called the warning webhook: %v calls, want %v", after, before)
	}
	expectWarnings(t, w, "apply after the quota is gone")
}

// TestTheWarningScopeComesBackAfterAnInstallerWritesTheConfiguration: an
// installer writing the configuration again (clusterctl upgrade puts the
// generated selector back) loses the scope only for a moment, and the
// scope's writes leave what others wrote (the CA bundle) as it is.
func TestTheWarningScopeComesBackAfterAnInstallerWritesTheConfiguration(t *testing.T) {
	ns := namespace(t, "reinstall", true)
	frq(t, ns, "team", list("cpu", "1"))
	waitScope(t, ns, true)

	cfg, _ := warningSelectors(t)
	caBundles := map[string][]byte{}
	for i := range cfg.Webhooks {
		wh := &cfg.Webhooks[i]
		caBundles[wh.Name] = wh.ClientConfig.CABundle
		if slices.Contains(webhooks.WorkloadQuotaWebhooks, wh.Name) {
			wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"flotilla.io/federated": "true"}}
		}
	}
	must(t, env.Client.Update(context.Background(), cfg))
	waitScope(t, ns, true)

	cfg, _ = warningSelectors(t)
	for _, wh := range cfg.Webhooks {
		if string(wh.ClientConfig.CABundle) != string(caBundles[wh.Name]) {
			t.Errorf("webhook %s: the CA bundle changed", wh.Name)
		}
		if slices.Contains(webhooks.WorkloadQuotaWebhooks, wh.Name) && wh.NamespaceSelector.MatchLabels["flotilla.io/federated"] != "true" {
			t.Errorf("webhook %s: the installed flotilla.io/federated=true requirement is gone: %v", wh.Name, wh.NamespaceSelector)
		}
	}
}

// TestTheManagerMayChangeOnlyTheWarningScopeOfWebhooks: the manager's
// ClusterRole patches any object (the detector claims templates of any
// kind), so it is the flotilla-manager-writes admission policy that keeps
// the scope's write from being a door to the hub's admission checks. Asked
// with real requests as the manager's ServiceAccount: it can change the
// quota warning webhooks' namespaceSelector in its own configuration, and
// cannot loosen, redirect, add or remove any webhook there, relabel it,
// delete it, or change another configuration (which would turn off a
// platform's admission check).
func TestTheManagerMayChangeOnlyTheWarningScopeOfWebhooks(t *testing.T) {
	ctx := context.Background()
	asManager, err := client.New(managerConfig(), client.Options{Scheme: env.Scheme})
	must(t, err)

	failOpen := admissionregistrationv1.Ignore
	none := admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/never"
	other := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "platform-guard"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "guard.platform.example.com", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy: &failOpen, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"guarded-by": "platform"}},
		}},
	}
	must(t, env.Client.Create(ctx, other))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), other) })

	// asManagerUpdate patches the manager's own configuration, changed by
	// change, as the manager.
	asManagerUpdate := func(change func(*admissionregistrationv1.ValidatingWebhookConfiguration)) error {
		cfg, _ := warningSelectors(t)
		before := cfg.DeepCopy()
		change(cfg)
		return asManager.Patch(ctx, cfg, client.MergeFrom(before))
	}
	webhook := func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, name string) *admissionregistrationv1.ValidatingWebhook {
		for i := range cfg.Webhooks {
			if cfg.Webhooks[i].Name == name {
				return &cfg.Webhooks[i]
			}
		}
		t.Fatalf("%s holds no webhook %s", cfg.Name, name)
		return nil
	}
	warning, inert := webhooks.WorkloadQuotaWebhooks[0], "inert.namespace.flotilla.io"

	if err := asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		w := webhook(cfg, warning)
		w.NamespaceSelector = quotacontroller.ScopedSelector(w.NamespaceSelector, []string{"some-namespace-with-a-quota"})
	}); err != nil {
		t.Errorf("the manager cannot scope its quota warnings: %v", err)
	}
	waitScope(t, "some-namespace-with-a-quota", false) // and the scope puts its own back

	forbidden := func(what string, err error) {
		t.Helper()
		if !apierrors.IsForbidden(err) {
			t.Errorf("the manager could %s: err %v, want Forbidden", what, err)
		}
	}
	forbidden("take away the inert namespace check", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		webhook(cfg, inert).NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"never": "matches"}}
	}))
	forbidden("point a quota warning webhook elsewhere", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		webhook(cfg, warning).ClientConfig.URL = &url
	}))
	forbidden("make a quota warning webhook refuse what it cannot reach", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		fail := admissionregistrationv1.Fail
		webhook(cfg, warning).FailurePolicy = &fail
	}))
	forbidden("remove a webhook", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool { return w.Name == inert })
	}))
	forbidden("add a webhook", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		added := *other.Webhooks[0].DeepCopy()
		cfg.Webhooks = append(cfg.Webhooks, added)
	}))
	forbidden("change its configuration's annotations", asManagerUpdate(func(cfg *admissionregistrationv1.ValidatingWebhookConfiguration) {
		cfg.Annotations = map[string]string{"cert-manager.io/inject-ca-from": "tenant/their-certificate"}
	}))
	forbidden("delete its own webhook configuration", asManager.Delete(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: quotacontroller.DefaultWebhookConfiguration}}))
	forbidden("patch another webhook configuration", asManager.Patch(ctx, other.DeepCopy(), client.RawPatch(types.JSONPatchType, []byte(`[{"op":"replace","path":"/webhooks/0/namespaceSelector","value":{"matchLabels":{"guarded-by":"nobody"}}}]`))))
	forbidden("delete another webhook configuration", asManager.Delete(ctx, other.DeepCopy()))
	created := other.DeepCopy()
	created.ResourceVersion, created.Name = "", "flotilla-validating-webhook-configuration-2"
	forbidden("create a webhook configuration", asManager.Create(ctx, created))
	forbidden("patch a mutating webhook configuration", asManager.Patch(ctx,
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-mutating-webhook-configuration"}},
		client.RawPatch(types.MergePatchType, []byte(`{"webhooks":[]}`))))

	after := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(other), after))
	if got := after.Webhooks[0].NamespaceSelector.MatchLabels["guarded-by"]; got != "platform" {
		t.Errorf("the other configuration's selector is %q, want platform", got)
	}
	own, _ := warningSelectors(t)
	if sel := webhook(own, inert).NamespaceSelector; sel == nil || sel.MatchLabels["flotilla.io/federated"] != "true" {
		t.Errorf("the inert namespace check's selector is %v", sel)
	}
}
