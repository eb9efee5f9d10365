package clusterctl_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/clusterctl/release"
)

// localRepository is a clusterctl provider repository on disk, filled the
// way each provider's release would be, and a clusterctl configuration that
// points clusterctl at it.
type localRepository struct {
	dir       string
	providers []providerEntry
}

type providerEntry struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Type string `json:"type"`
}

// addClusterAPI adds Cluster API's own providers — core, kubeadm bootstrap
// and kubeadm control plane, the ones `clusterctl init` installs on a new
// management cluster — built with kustomize from the config/ folders of the
// Cluster API module this repository builds with, as its release does.
// Nothing is downloaded.
func (r *localRepository) addClusterAPI(t *testing.T) {
	t.Helper()
	dir := clusterAPIDir(t)
	version := "v" + strings.TrimPrefix(filepath.Base(dir), "cluster-api@v")
	metadata, err := os.ReadFile(filepath.Join(dir, "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, label, typ, config, file string }{
		{"cluster-api", "cluster-api", "CoreProvider", "core/config/default", "core-components.yaml"},
		{"kubeadm", "bootstrap-kubeadm", "BootstrapProvider", "bootstrap/kubeadm/config/default", "bootstrap-components.yaml"},
		{"kubeadm", "control-plane-kubeadm", "ControlPlaneProvider", "controlplane/kubeadm/config/default", "control-plane-components.yaml"},
	} {
		folder := filepath.Join(r.dir, p.label, version)
		if err := os.MkdirAll(folder, 0o755); err != nil {
			t.Fatal(err)
		}
		components := kustomizeBuild(t, filepath.Join(dir, p.config))
		for name, data := range map[string][]byte{p.file: components, "metadata.yaml": metadata} {
			if err := os.WriteFile(filepath.Join(folder, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r.providers = append(r.providers, providerEntry{Name: p.name, Type: p.typ, URL: "file://" + filepath.Join(folder, p.file)})
	}
}

// addFlotilla adds the output of `make release-manifests`.
func (r *localRepository) addFlotilla(a release.Artifacts) {
	r.providers = append(r.providers, providerEntry{Name: release.ProviderName, Type: string(clusterctlv1.AddonProviderType), URL: "file://" + a.RepositoryComponents})
}

// client is clusterctl's client reading a clusterctl.yaml that lists the
// repository's providers and the given variables.
func (r *localRepository) client(t *testing.T, variables map[string]string) clusterctl.Client {
	t.Helper()
	cfg := map[string]any{"providers": r.providers, "overridesFolder": t.TempDir()}
	for k, v := range variables {
		cfg[k] = v
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "clusterctl.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := clusterctl.New(context.Background(), path)
	if err != nil {
		t.Fatalf("clusterctl client: %v", err)
	}
	return c
}

// `clusterctl init --addon flotilla` on a new management cluster, run with
// clusterctl's library against a real kube-apiserver, from local
// repositories: clusterctl installs Cluster API's core and kubeadm
// providers and Flotilla, records them in its inventory, and substitutes the
// user's variables. Then the lifecycle commands that depend on Flotilla's
// labels: `clusterctl move --to-directory` (backup) takes the user's
// policies and leaves what the manager derives; `clusterctl delete --addon
// flotilla` removes the provider and keeps its CRDs and their objects.
func TestClusterctlInitAddonFlotilla(t *testing.T) {
	api := startAPIServer(t)
	api.installCRDs(t, certManagerStandIns())
	kubeconfig := clusterctl.Kubeconfig{Path: api.kubeconfig(t)}
	ctx := ctxFor(t, 3*time.Minute)

	repo := &localRepository{dir: t.TempDir()}
	repo.addClusterAPI(t)
	a := writeRelease(t, "registry.example/flotilla", "v0.1.0")
	repo.addFlotilla(a)
	c := repo.client(t, map[string]string{"FLOTILLA_ENROL_ALL": "true"})

	installed, err := c.Init(ctx, clusterctl.InitOptions{Kubeconfig: kubeconfig, AddonProviders: []string{release.ProviderName}})
	if err != nil {
		t.Fatalf("clusterctl init --addon flotilla: %v", err)
	}
	var names []string
	for _, p := range installed {
		names = append(names, p.ManifestLabel()+"@"+p.Version())
	}
	if !slices.Contains(names, release.ProviderLabel+"@"+a.Version) {
		t.Fatalf("clusterctl init installed %v, not %s@%s", names, release.ProviderLabel, a.Version)
	}

	hub := api.clusterctlClient(t)
	t.Run("records Flotilla in clusterctl's inventory", func(t *testing.T) {
		p := &clusterctlv1.Provider{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: release.Namespace, Name: release.ProviderLabel}, p); err != nil {
			t.Fatalf("inventory: %v", err)
		}
		if p.ProviderName != release.ProviderName || p.Type != string(clusterctlv1.AddonProviderType) || p.Version != a.Version {
			t.Errorf("inventory says %s %s %s, want %s AddonProvider %s", p.ProviderName, p.Type, p.Version, release.ProviderName, a.Version)
		}
	})

	t.Run("installs the manager with the user's variables", func(t *testing.T) {
		d := &appsv1.Deployment{}
		if err := hub.Get(ctx, client.ObjectKey{Namespace: release.Namespace, Name: "flotilla-manager"}, d); err != nil {
			t.Fatalf("Deployment: %v", err)
		}
		if d.Labels[clusterv1.ProviderNameLabel] != release.ProviderLabel {
			t.Errorf("Deployment labels %v lack %s=%s", d.Labels, clusterv1.ProviderNameLabel, release.ProviderLabel)
		}
		ctr := d.Spec.Template.Spec.Containers[0]
		if ctr.Image != "registry.example/flotilla/flotilla-manager:v0.1.0" {
			t.Errorf("manager image %s, want the release's", ctr.Image)
		}
		if !slices.Contains(ctr.Args, "--enrol-all=true") {
			t.Errorf("manager args %v lack FLOTILLA_ENROL_ALL's --enrol-all=true", ctr.Args)
		}
	})

	t.Run("backs up the user's policies, not what the manager derives", func(t *testing.T) {
		// The release defaults PropagationPolicies through the manager's
		// webhook (failurePolicy Fail), and no manager runs here to serve
		// it: check that init installed it, then take it out so that the
		// user's objects below can be written.
		mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
		if err := hub.Get(ctx, client.ObjectKey{Name: "flotilla-mutating-webhook-configuration"}, mwc); err != nil {
			t.Fatalf("the release's defaulting webhook: %v", err)
		}
		if len(mwc.Webhooks) != 2 || mwc.Annotations["cert-manager.io/inject-ca-from"] == "" {
			t.Errorf("the release's defaulting webhook has %d webhooks and CA injection %q, want 2 and the serving Certificate",
				len(mwc.Webhooks), mwc.Annotations["cert-manager.io/inject-ca-from"])
		}
		if err := hub.Delete(ctx, mwc); err != nil {
			t.Fatal(err)
		}
		for _, o := range []string{
			`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"apps"}}`,
			`{"apiVersion":"policy.flotilla.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"web","namespace":"apps"},
			  "spec":{"resourceSelectors":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web"}]}}`,
			`{"apiVersion":"work.flotilla.io/v1alpha1","kind":"ResourceBinding","metadata":{"name":"web-deployment","namespace":"apps"},
			  "spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","namespace":"apps","name":"web"}}}`,
		} {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(o)); err != nil {
				t.Fatal(err)
			}
			if err := hub.Create(ctx, u); err != nil {
				t.Fatalf("create %s: %v", kindName(u), err)
			}
		}
		// clusterctl's discovery lists every kind a CRD defines, each after
		// a throttled discovery call: about 25 s for the 30 CRDs here.
		backup := t.TempDir()
		if err := c.Move(ctx, clusterctl.MoveOptions{FromKubeconfig: kubeconfig, Namespace: "apps", ToDirectory: backup}); err != nil {
			t.Fatalf("clusterctl move --to-directory: %v", err)
		}
		kinds := backedUpKinds(t, backup)
		if !slices.Contains(kinds, "PropagationPolicy apps/web") {
			t.Errorf("the backup holds %v, not the PropagationPolicy", kinds)
		}
		if slices.Contains(kinds, "ResourceBinding apps/web-deployment") {
			t.Errorf("the backup holds the ResourceBinding the manager derives: %v", kinds)
		}
	})

	t.Run("deletes the provider and keeps its CRDs", func(t *testing.T) {
		if err := c.Delete(ctx, clusterctl.DeleteOptions{Kubeconfig: kubeconfig, AddonProviders: []string{release.ProviderName}}); err != nil {
			t.Fatalf("clusterctl delete --addon flotilla: %v", err)
		}
		gone := []client.Object{
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: release.Namespace, Name: "flotilla-manager"}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: release.Namespace, Name: "flotilla-webhook-service"}},
			&clusterctlv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: release.Namespace, Name: release.ProviderLabel}},
		}
		for _, o := range gone {
			if err := hub.Get(ctx, client.ObjectKeyFromObject(o), o); !apierrors.IsNotFound(err) {
				t.Errorf("%T %s after clusterctl delete: %v, want it gone", o, client.ObjectKeyFromObject(o), err)
			}
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := hub.Get(ctx, client.ObjectKey{Name: "propagationpolicies.policy.flotilla.io"}, crd); err != nil {
			t.Errorf("the PropagationPolicy CRD after clusterctl delete (without --include-crd): %v", err)
		}
	})
}

// clusterctlClient reads Kubernetes objects and clusterctl's inventory.
func (a *apiserver) clusterctlClient(t *testing.T) client.Client {
	t.Helper()
	s := scheme()
	if err := clusterctlv1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(a.config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// backedUpKinds lists "<Kind> <namespace>/<name>" of each object in a
// `clusterctl move --to-directory` folder.
func backedUpKinds(t *testing.T, dir string) []string {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		objs, err := utilyaml.ToUnstructured(data)
		if err != nil {
			t.Fatalf("%s: %v", f.Name(), err)
		}
		for i := range objs {
			out = append(out, kindName(&objs[i]))
		}
	}
	return out
}
