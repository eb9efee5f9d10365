package release_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/repository"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/yamlprocessor"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/clusterctl/release"
)

// A release built for a registry and tag other than the defaults, so that
// the tests see the release's values and not config/'s.
const (
	testRegistry = "registry.example/flotilla"
	testTag      = "v0.1.0-rc.1"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

func writeRelease(t *testing.T) release.Artifacts {
	t.Helper()
	a, err := release.Write(t.TempDir(), release.Options{RepoRoot: repoRoot(t), Registry: testRegistry, Tag: testTag})
	if err != nil {
		t.Fatalf("release.Write: %v", err)
	}
	return a
}

// providerEntry is one item of clusterctl.yaml's providers list.
type providerEntry struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Type string `json:"type"`
}

// clusterctlRepository registers Flotilla with clusterctl the way
// clusterctl/clusterctl.yaml tells users to, its URL pointed at the local
// repository, with extra clusterctl variables, in a clusterctl
// configuration file; it returns clusterctl's repository client for it.
func clusterctlRepository(t *testing.T, a release.Artifacts, variables map[string]string) repository.Client {
	t.Helper()
	ctx := context.Background()
	snippet, err := os.ReadFile(filepath.Join(repoRoot(t), "clusterctl", "clusterctl.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(snippet, &cfg); err != nil {
		t.Fatalf("clusterctl/clusterctl.yaml: %v", err)
	}
	var providers []providerEntry
	if data, err := yaml.Marshal(cfg["providers"]); err != nil {
		t.Fatal(err)
	} else if err := yaml.Unmarshal(data, &providers); err != nil {
		t.Fatalf("clusterctl/clusterctl.yaml providers: %v", err)
	}
	if len(providers) != 1 {
		t.Fatalf("clusterctl/clusterctl.yaml registers %d providers, want Flotilla alone", len(providers))
	}
	p := providers[0]
	if p.Name != release.ProviderName || p.Type != string(clusterctlv1.AddonProviderType) || path(p.URL) != release.ComponentsFile {
		t.Fatalf("clusterctl/clusterctl.yaml registers %+v, want name %s, type AddonProvider, a URL ending in /%s",
			p, release.ProviderName, release.ComponentsFile)
	}
	p.URL = "file://" + a.RepositoryComponents
	cfg["providers"] = []providerEntry{p}
	// The user's own overrides folder must not replace the file under test.
	cfg["overridesFolder"] = t.TempDir()
	for k, v := range variables {
		cfg[k] = v
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	configClient, err := config.New(ctx, file)
	if err != nil {
		t.Fatalf("clusterctl config %s: %v", file, err)
	}
	provider, err := configClient.Providers().Get(release.ProviderName, clusterctlv1.AddonProviderType)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := repository.New(ctx, provider, configClient)
	if err != nil {
		t.Fatalf("clusterctl repository client for %s: %v", p.URL, err)
	}
	return repo
}

func path(url string) string { return url[strings.LastIndex(url, "/")+1:] }

// components reads the provider's components through clusterctl: the
// repository, variable substitution, image overrides, the target namespace
// and the provider labels, as `clusterctl init --addon flotilla` and
// `clusterctl generate provider --addon flotilla` do.
func components(t *testing.T, repo repository.Client, targetNamespace string) repository.Components {
	t.Helper()
	c, err := repo.Components().Get(context.Background(), repository.ComponentsOptions{TargetNamespace: targetNamespace})
	if err != nil {
		t.Fatalf("clusterctl rejects the components: %v", err)
	}
	return c
}

func object[T any](t *testing.T, c repository.Components, kind, name string) *T {
	t.Helper()
	for _, o := range c.Objs() {
		if o.GetKind() == kind && o.GetName() == name {
			out := new(T)
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return out
		}
	}
	t.Fatalf("the components hold no %s %s", kind, name)
	return nil
}

func managerContainer(t *testing.T, c repository.Components) corev1.Container {
	t.Helper()
	d := object[appsv1.Deployment](t, c, "Deployment", "flotilla-manager")
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name == "manager" {
			return ctr
		}
	}
	t.Fatal("Deployment flotilla-manager has no container named manager")
	return corev1.Container{}
}

func TestClusterctlReadsTheAddonProviderFromALocalRepository(t *testing.T) {
	a := writeRelease(t)
	repo := clusterctlRepository(t, a, nil)
	if repo.ManifestLabel() != release.ProviderLabel {
		t.Errorf("manifest label %q, want %q", repo.ManifestLabel(), release.ProviderLabel)
	}
	versions, err := repo.GetVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(versions, a.Version) {
		t.Errorf("repository versions %v lack %s", versions, a.Version)
	}
	c := components(t, repo, "")
	if c.Version() != a.Version || c.Type() != clusterctlv1.AddonProviderType || c.Name() != release.ProviderName {
		t.Errorf("components are %s %s %s, want %s AddonProvider %s", c.Name(), c.Type(), c.Version(), release.ProviderName, a.Version)
	}
	if c.TargetNamespace() != release.Namespace {
		t.Errorf("target namespace %q, want %q", c.TargetNamespace(), release.Namespace)
	}
}

func TestComponentsRenderWithTheReleaseDefaults(t *testing.T) {
	repo := clusterctlRepository(t, writeRelease(t), nil)

	// clusterctl init asks for every variable without a default; Flotilla's
	// all have one, so `clusterctl init --addon flotilla` needs none set.
	raw, err := repo.Components().Raw(context.Background(), repository.ComponentsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	vars, err := yamlprocessor.NewSimpleProcessor().GetVariableMap(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) == 0 {
		t.Fatal("the components have no clusterctl variables")
	}
	for name, def := range vars {
		if def == nil {
			t.Errorf("variable %s has no default: clusterctl init would stop for it", name)
		}
	}

	c := components(t, repo, "")
	rendered, err := c.Yaml()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rendered), "${") {
		t.Error("a ${...} is left after clusterctl's variable substitution")
	}
	ctr := managerContainer(t, c)
	if want := testRegistry + "/flotilla-manager:" + testTag; ctr.Image != want {
		t.Errorf("manager image %q, want the release's %q", ctr.Image, want)
	}
	if !slices.Contains(c.Images(), ctr.Image) {
		t.Errorf("clusterctl's image list %v lacks the manager's %s", c.Images(), ctr.Image)
	}
	for _, arg := range []string{
		"--enrol-all=false",
		"--flotilla-version=" + testTag,
		"--estimator-image=" + testRegistry + "/flotilla-estimator:" + testTag,
		"--agent-image=" + testRegistry + "/flotilla-agent:" + testTag,
		"--leader-elect=true",
	} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("manager args lack %s: %v", arg, ctr.Args)
		}
	}
}

func TestComponentsTakeTheUsersVariables(t *testing.T) {
	// From clusterctl.yaml, and from the environment (which wins).
	t.Setenv("FLOTILLA_MEMBER_DRAIN_TIMEOUT", "3m")
	repo := clusterctlRepository(t, writeRelease(t), map[string]string{
		"FLOTILLA_ENROL_ALL":            "true",
		"FLOTILLA_IMAGE":                "mirror.example/flotilla-manager:v0.1.0",
		"FLOTILLA_MEMBER_DRAIN_TIMEOUT": "1m",
	})
	ctr := managerContainer(t, components(t, repo, ""))
	if ctr.Image != "mirror.example/flotilla-manager:v0.1.0" {
		t.Errorf("manager image %q, want FLOTILLA_IMAGE's", ctr.Image)
	}
	for _, arg := range []string{"--enrol-all=true", "--member-drain-timeout=3m"} {
		if !slices.Contains(ctr.Args, arg) {
			t.Errorf("manager args lack %s: %v", arg, ctr.Args)
		}
	}
}

func TestEveryObjectCarriesTheProviderLabelsAndNamespace(t *testing.T) {
	c := components(t, clusterctlRepository(t, writeRelease(t), nil), "")
	namespaces := 0
	for _, o := range c.Objs() {
		id := o.GetKind() + " " + o.GetName()
		labels := o.GetLabels()
		if labels[clusterv1.ProviderNameLabel] != release.ProviderLabel {
			t.Errorf("%s: label %s = %q, want %q", id, clusterv1.ProviderNameLabel, labels[clusterv1.ProviderNameLabel], release.ProviderLabel)
		}
		if _, ok := labels[clusterctlv1.ClusterctlLabel]; !ok {
			t.Errorf("%s lacks clusterctl's label %s", id, clusterctlv1.ClusterctlLabel)
		}
		switch o.GetKind() {
		case "Namespace":
			namespaces++
			if o.GetName() != release.Namespace {
				t.Errorf("Namespace %s, want %s", o.GetName(), release.Namespace)
			}
		case "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
			if o.GetNamespace() != "" {
				t.Errorf("cluster-scoped %s has namespace %q", id, o.GetNamespace())
			}
		default:
			if o.GetNamespace() != release.Namespace {
				t.Errorf("%s is in namespace %q, want %s", id, o.GetNamespace(), release.Namespace)
			}
		}
	}
	if namespaces != 1 {
		t.Errorf("%d Namespace objects, want exactly one", namespaces)
	}
}

// The objects refer to each other by name; a rename in one file of config/
// must not leave a dangling reference.
func TestComponentsReferToEachOther(t *testing.T) {
	c := components(t, clusterctlRepository(t, writeRelease(t), nil), "")
	d := object[appsv1.Deployment](t, c, "Deployment", "flotilla-manager")
	pod := d.Spec.Template.Spec
	ctr := managerContainer(t, c)

	sa := object[corev1.ServiceAccount](t, c, "ServiceAccount", pod.ServiceAccountName)
	crb := object[rbacv1.ClusterRoleBinding](t, c, "ClusterRoleBinding", "flotilla-manager")
	object[rbacv1.ClusterRole](t, c, "ClusterRole", crb.RoleRef.Name)
	if len(crb.Subjects) != 1 || crb.Subjects[0].Name != sa.Name || crb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("ClusterRoleBinding subjects %+v, want the manager's ServiceAccount %s/%s", crb.Subjects, sa.Namespace, sa.Name)
	}
	rb := object[rbacv1.RoleBinding](t, c, "RoleBinding", "flotilla-leader-election")
	object[rbacv1.Role](t, c, "Role", rb.RoleRef.Name)
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != sa.Name {
		t.Errorf("leader election RoleBinding subjects %+v, want the manager's ServiceAccount", rb.Subjects)
	}

	svc := object[corev1.Service](t, c, "Service", "flotilla-webhook-service")
	for k, v := range svc.Spec.Selector {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("webhook Service selects %s=%s, the manager's pods lack it", k, v)
		}
	}
	if !slices.ContainsFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == svc.Spec.Ports[0].TargetPort.StrVal }) {
		t.Errorf("webhook Service targets port %q, the manager has no such port", svc.Spec.Ports[0].TargetPort.StrVal)
	}
	cert := findUnstructured(t, c, "Certificate")
	configs := webhookConfigurations(c)
	if len(configs) == 0 {
		t.Fatal("the components hold no webhook configuration")
	}
	for _, wc := range configs {
		id := wc.GetKind() + " " + wc.GetName()
		// Every webhook calls the manager's Service, and cert-manager injects
		// the CA of the Certificate the manager serves with.
		for _, hook := range webhooks(t, wc) {
			name, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "name")
			namespace, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "namespace")
			if name != svc.Name || namespace != svc.Namespace {
				t.Errorf("%s: webhook %v calls service %s/%s, want %s/%s", id, hook["name"], namespace, name, svc.Namespace, svc.Name)
			}
		}
		if got, want := wc.GetAnnotations()["cert-manager.io/inject-ca-from"], cert.GetNamespace()+"/"+cert.GetName(); got != want {
			t.Errorf("%s: inject-ca-from %q, want the Certificate %s", id, got, want)
		}
	}
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == secretName }) {
		t.Errorf("the manager does not mount the Certificate's Secret %s", secretName)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if want := svc.Name + "." + svc.Namespace + ".svc"; !slices.Contains(dnsNames, want) {
		t.Errorf("Certificate dnsNames %v lack the webhook Service's %s", dnsNames, want)
	}
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if findUnstructured(t, c, "Issuer").GetName() != issuer {
		t.Errorf("Certificate issuer %q is not the components' Issuer", issuer)
	}
}

// clusterctl init --target-namespace moves a provider; its references to
// its own namespace must follow.
func TestComponentsFollowAnotherTargetNamespace(t *testing.T) {
	const ns = "fleet-hub"
	c := components(t, clusterctlRepository(t, writeRelease(t), nil), ns)
	if got := findUnstructured(t, c, "Namespace").GetName(); got != ns {
		t.Errorf("Namespace %s, want %s", got, ns)
	}
	for _, wc := range webhookConfigurations(c) {
		for _, hook := range webhooks(t, wc) {
			if got, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "namespace"); got != ns {
				t.Errorf("%s: webhook %v calls a service in %q, want %q", wc.GetName(), hook["name"], got, ns)
			}
		}
		if got := wc.GetAnnotations()["cert-manager.io/inject-ca-from"]; got != ns+"/flotilla-serving-cert" {
			t.Errorf("%s: inject-ca-from %q, want %s/flotilla-serving-cert", wc.GetName(), got, ns)
		}
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(findUnstructured(t, c, "Certificate").Object, "spec", "dnsNames")
	if !slices.Contains(dnsNames, "flotilla-webhook-service."+ns+".svc") {
		t.Errorf("Certificate dnsNames %v do not name the Service in %s", dnsNames, ns)
	}
	for _, name := range []string{"flotilla-manager"} {
		crb := object[rbacv1.ClusterRoleBinding](t, c, "ClusterRoleBinding", name)
		if crb.Subjects[0].Namespace != ns {
			t.Errorf("ClusterRoleBinding %s binds a ServiceAccount in %q, want %q", name, crb.Subjects[0].Namespace, ns)
		}
	}
}

func TestComponentsHoldEveryCRDWithTheLabelsClusterctlNeeds(t *testing.T) {
	c := components(t, clusterctlRepository(t, writeRelease(t), nil), "")
	files, err := filepath.Glob(filepath.Join(repoRoot(t), "config", "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var generated apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(data, &generated); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crd := object[apiextensionsv1.CustomResourceDefinition](t, c, "CustomResourceDefinition", generated.Name)
		if crd == nil {
			continue
		}
		// The contract label names the API version that satisfies Cluster
		// API's current contract; it must be one the CRD serves.
		contract := crd.Labels[clusterv1.GroupVersion.Group+"/"+clusterv1.GroupVersion.Version]
		if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool {
			return v.Name == contract && v.Served
		}) {
			t.Errorf("CRD %s: contract label %s/%s = %q, not a served version", crd.Name, clusterv1.GroupVersion.Group, clusterv1.GroupVersion.Version, contract)
		}
		// clusterctl move copies every object of a kind with the move
		// label: the user's policies and interpreter customizations, not
		// what the manager derives.
		_, moved := crd.Labels[clusterctlv1.ClusterctlMoveLabel]
		if wantMoved := crd.Spec.Group == "policy.flotilla.io" || crd.Spec.Group == "config.flotilla.io"; moved != wantMoved {
			t.Errorf("CRD %s: move label %v, want %v (only policy.flotilla.io and config.flotilla.io kinds move)", crd.Name, moved, wantMoved)
		}
	}
	crds := 0
	for _, o := range c.Objs() {
		if o.GetKind() == "CustomResourceDefinition" {
			crds++
		}
	}
	if crds != len(files) {
		t.Errorf("%d CRDs in the components, %d in config/crd/bases: list new ones in config/crd/kustomization.yaml", crds, len(files))
	}
}

func TestMetadataMapsTheReleaseToTheCurrentContract(t *testing.T) {
	a := writeRelease(t)
	repo := clusterctlRepository(t, a, nil)
	md, err := repo.Metadata(a.Version).Get(context.Background())
	if err != nil {
		t.Fatalf("clusterctl cannot read metadata.yaml: %v", err)
	}
	v, err := version.ParseSemantic(a.Version)
	if err != nil {
		t.Fatal(err)
	}
	series := md.GetReleaseSeriesForVersion(v)
	if series == nil {
		t.Fatalf("metadata.yaml has no release series for %s", a.Version)
	}
	if series.Contract != clusterv1.GroupVersion.Version {
		t.Errorf("release series %d.%d has contract %s, Cluster API's is %s", series.Major, series.Minor, series.Contract, clusterv1.GroupVersion.Version)
	}
}

func TestLocalRepositoryServesTheClusterTemplate(t *testing.T) {
	a := writeRelease(t)
	repo := clusterctlRepository(t, a, nil)
	tmpl, err := repo.Templates(a.Version).Get(context.Background(), "flotilla", "fleet", true)
	if err != nil {
		t.Fatalf("clusterctl cannot read the flotilla flavor from the repository: %v", err)
	}
	if !slices.Contains(tmpl.Variables(), "FLOTILLA_REGION") {
		t.Errorf("the repository's cluster-template-flotilla.yaml lacks FLOTILLA_REGION: %v", tmpl.Variables())
	}
}

func TestSetDefaultsRefusesAVariableTheComponentsLack(t *testing.T) {
	out, err := release.SetDefaults([]byte("image: ${FLOTILLA_IMAGE:=a/b:dev}\n"), map[string]string{"FLOTILLA_IMAGE": "c/d:v1"})
	if err != nil || string(out) != "image: ${FLOTILLA_IMAGE:=c/d:v1}\n" {
		t.Errorf("SetDefaults = %q, %v; want the default replaced", out, err)
	}
	if _, err := release.SetDefaults([]byte("image: x\n"), map[string]string{"FLOTILLA_IMAGE": "c/d:v1"}); err == nil {
		t.Error("SetDefaults accepted a variable the components do not have")
	}
}

func TestOptionsAreRequired(t *testing.T) {
	_, err := release.Components(release.Options{RepoRoot: repoRoot(t)})
	if err == nil || !strings.Contains(err.Error(), "Registry") || !strings.Contains(err.Error(), "Tag") {
		t.Errorf("Components without registry and tag: %v", err)
	}
	if _, err := release.Components(release.Options{RepoRoot: t.TempDir(), Registry: "r", Tag: "t"}); err == nil {
		t.Error("Components built from a folder without config/default")
	}
}

func findUnstructured(t *testing.T, c repository.Components, kind string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range c.Objs() {
		if o.GetKind() == kind {
			return &o
		}
	}
	t.Fatalf("the components hold no %s", kind)
	return nil
}

// webhookConfigurations are the validating and mutating ones.
func webhookConfigurations(c repository.Components) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, o := range c.Objs() {
		if o.GetKind() == "ValidatingWebhookConfiguration" || o.GetKind() == "MutatingWebhookConfiguration" {
			out = append(out, o)
		}
	}
	return out
}

func webhooks(t *testing.T, wc unstructured.Unstructured) []map[string]any {
	t.Helper()
	hooks, _, _ := unstructured.NestedSlice(wc.Object, "webhooks")
	if len(hooks) == 0 {
		t.Fatalf("%s %s has no webhooks", wc.GetKind(), wc.GetName())
	}
	var out []map[string]any
	for _, h := range hooks {
		out = append(out, h.(map[string]any))
	}
	return out
}
