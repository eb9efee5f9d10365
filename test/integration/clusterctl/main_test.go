// Package clusterctl_test specifies Flotilla's clusterctl release artifacts
// against real kube-apiservers (envtest, binaries from bin/): every object of
// addon-components.yaml applies to an apiserver that has nothing installed;
// `clusterctl init --addon flotilla`, through clusterctl's own library,
// installs Flotilla from a local repository on a management cluster whose
// Cluster API core provider clusterctl installed from the same kind of
// repository; the cluster template's Cluster API objects pass the schemas of
// Cluster API's CRDs; the manager Deployment passes only flags
// flotilla-manager has.
//
// cert-manager is not available offline. It stays outside the test's scope
// the way clusterctl itself treats it: a stand-in CRD for each of its kinds
// Flotilla uses (Issuer, Certificate) lets the apiserver store those objects
// and lets clusterctl's cert-manager check pass; nothing issues certificates
// and no Pod runs (envtest has no controllers or nodes).
package clusterctl_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clusterctllog "sigs.k8s.io/cluster-api/cmd/clusterctl/log"
	utilyaml "sigs.k8s.io/cluster-api/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/flotilla-io/flotilla/clusterctl/release"
	"github.com/flotilla-io/flotilla/test/testenv"
)

var repoRoot string

func TestMain(m *testing.M) {
	// Quiet unless FLOTILLA_TEST_LOG is set: failures say what they waited for.
	if os.Getenv("FLOTILLA_TEST_LOG") == "" {
		ctrl.SetLogger(logr.Discard())
		clusterctllog.SetLogger(logr.Discard())
	} else {
		ctrl.SetLogger(klog.Background())
		verbose := 5
		clusterctllog.SetLogger(clusterctllog.NewLogger(clusterctllog.WithThreshold(&verbose)))
	}
	var err error
	if repoRoot, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, "clusterctl integration tests:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// apiserver is a kube-apiserver and etcd with nothing installed.
type apiserver struct {
	env    *envtest.Environment
	config *rest.Config
	client client.Client
}

// startAPIServer starts a fresh apiserver for one test and stops it when the
// test ends.
func startAPIServer(t *testing.T) *apiserver {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		assets = filepath.Join(repoRoot, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			t.Fatalf("%s not found in %s: run `make test-bins` first", b, assets)
		}
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop the apiserver: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return &apiserver{env: env, config: cfg, client: c}
}

func scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = apiextensionsv1.AddToScheme(s)
	return s
}

// kubeconfig writes a kubeconfig of a cluster-admin of the apiserver, for
// clusterctl.
func (a *apiserver) kubeconfig(t *testing.T) string {
	t.Helper()
	user, err := a.env.AddUser(envtest.User{Name: "clusterctl-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// installCRDs creates CRDs and waits until the apiserver serves them.
func (a *apiserver) installCRDs(t *testing.T, crds []*apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if _, err := envtest.InstallCRDs(a.config, envtest.CRDInstallOptions{CRDs: crds, MaxTime: time.Minute}); err != nil {
		t.Fatalf("install CRDs: %v", err)
	}
}

// certManagerStandIns are CRDs for the cert-manager kinds Flotilla's
// components and clusterctl's cert-manager check create: any content is
// stored, nothing acts on it.
func certManagerStandIns() []*apiextensionsv1.CustomResourceDefinition {
	crd := func(kind, plural string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: ptrTo(true),
					}},
					Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				}},
			},
		}
	}
	return []*apiextensionsv1.CustomResourceDefinition{crd("Issuer", "issuers"), crd("Certificate", "certificates")}
}

func ptrTo[T any](v T) *T { return &v }

// writeRelease runs what `make release-manifests` runs, into a temporary
// folder.
func writeRelease(t *testing.T, registry, tag string) release.Artifacts {
	t.Helper()
	a, err := release.Write(t.TempDir(), release.Options{RepoRoot: repoRoot, Registry: registry, Tag: tag})
	if err != nil {
		t.Fatalf("release.Write: %v", err)
	}
	return a
}

// clusterAPIDir is the folder of the Cluster API module this repository
// builds with.
func clusterAPIDir(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/cluster-api")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m sigs.k8s.io/cluster-api: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// kustomizeBuild builds a kustomization folder with kustomize's library.
func kustomizeBuild(t *testing.T, dir string) []byte {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// crdsFromFiles reads CRDs from YAML files.
func crdsFromFiles(t *testing.T, globs ...string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil || len(files) == 0 {
			t.Fatalf("no CRDs at %s", g)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := utilyaml.ToUnstructured(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, o := range objs {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				crds = append(crds, crd)
			}
		}
	}
	return crds
}

func kindName(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetKind() + " " + o.GetName()
	}
	return o.GetKind() + " " + o.GetNamespace() + "/" + o.GetName()
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
