package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/e2e/kindfleet/offline"
)

// What -providers builds for a registry-less management cluster: Cluster
// API's core, kubeadm bootstrap and kubeadm control-plane managers and CAPD
// (hack/tools/capd pins them, all at one version), the cert-manager stand-in
// hack/kindimage/certissuer, and CAPD's load balancer from Debian's haproxy.

const (
	capdModule   = "hack/tools/capd"
	capiModule   = "sigs.k8s.io/cluster-api"
	capiTest     = "sigs.k8s.io/cluster-api/test"
	imagePrefix  = "docker.io/flotilla-kind/"
	haproxyRepo  = "flotilla-kind" // CAPD appends /haproxy:<tag>
	haproxyTag   = "bookworm"
	certIssuerNS = "cert-manager"
)

// HaproxyPackages is the load balancer's rootfs.
var HaproxyPackages = []string{"haproxy"}

// provider is one Cluster API provider of the local clusterctl repository.
type provider struct {
	label, components, config, binary, image, pkg string
	module                                        string // whose folder holds config
}

func providers() []provider {
	return []provider{
		{"cluster-api", "core-components.yaml", "core/config/default", "capi-controller", "cluster-api-controller", "sigs.k8s.io/cluster-api/core", capiModule},
		{"bootstrap-kubeadm", "bootstrap-components.yaml", "bootstrap/kubeadm/config/default", "capi-kubeadm-bootstrap", "kubeadm-bootstrap-controller", "sigs.k8s.io/cluster-api/bootstrap/kubeadm", capiModule},
		{"control-plane-kubeadm", "control-plane-components.yaml", "controlplane/kubeadm/config/default", "capi-kubeadm-control-plane", "kubeadm-control-plane-controller", "sigs.k8s.io/cluster-api/controlplane/kubeadm", capiModule},
		{"infrastructure-docker", "infrastructure-components.yaml", "infrastructure/docker/config/default", "capd-manager", "capd-manager", "sigs.k8s.io/cluster-api/test/infrastructure/docker", capiTest},
	}
}

var providerTypes = map[string][2]string{
	"cluster-api":           {"cluster-api", "CoreProvider"},
	"bootstrap-kubeadm":     {"kubeadm", "BootstrapProvider"},
	"control-plane-kubeadm": {"kubeadm", "ControlPlaneProvider"},
	"infrastructure-docker": {"docker", "InfrastructureProvider"},
}

func moduleDir(root, module string) (string, error) {
	return output(filepath.Join(root, capdModule), []string{"GOFLAGS=-mod=mod -buildvcs=false"}, "go", "list", "-m", "-f", "{{.Dir}}", module)
}

// buildProviders writes the provider images, the cert-manager stand-in and
// the clusterctl repository into out (a folder, replaced whole), and the
// haproxy image into the Docker engine.
func (o options) buildProviders(root, out, nodeImage string) error {
	goVersion, err := output(root, nil, "go", "env", "GOVERSION")
	if err != nil {
		return err
	}
	capiVersion, err := output(filepath.Join(root, capdModule), []string{"GOFLAGS=-mod=mod -buildvcs=false"}, "go", "list", "-m", "-f", "{{.Version}}", capiModule)
	if err != nil {
		return err
	}
	key, err := hashTree(root, capdModule, "hack/kindimage/certissuer", "hack/kindimage/providers.go", "hack/kindimage/assets/cert-issuer.yaml", "go:"+goVersion)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.cache, 0o755); err != nil {
		return err
	}
	cached := filepath.Join(o.cache, "providers-"+key[:16])
	if err := o.step("provider images and repository", func() error { return writeProviders(root, cached+".tmp", capiVersion, key[:12]) }, cached); err != nil {
		return err
	}
	rkey := hashStrings("haproxy/v1", strings.Join(HaproxyPackages, ","), strings.Join(Sources, "\n"))
	hrootfs := filepath.Join(o.cache, "haproxy-rootfs-"+rkey[:16]+".tar")
	hkey := hashStrings(rkey, haproxyConfig, strings.Join(haproxyEntrypoint, " "), haproxyWrapper)
	if err := o.step("haproxy rootfs", func() error { return buildHaproxyRootfs(hrootfs) }, hrootfs); err != nil {
		return err
	}
	lbTag := haproxyRepo + "/haproxy:" + haproxyTag
	if id, err := output(root, nil, "docker", "image", "inspect", "--format", "{{index .Config.Labels \""+LabelInputs+"\"}}", lbTag); err != nil || id != hkey {
		if err := timed("docker load haproxy", func() error { return loadHaproxy(hrootfs, hkey, lbTag) }); err != nil {
			return err
		}
	} else {
		logf("%s is in the engine (inputs %s)", lbTag, hkey[:12])
	}
	pruneOthers(o.cache, []string{"providers-", "haproxy-rootfs-"}, cached, hrootfs)

	// out is a copy (hard links) of the cached folder plus offline.json.
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(outAbs); err != nil {
		return err
	}
	if err := copyTree(cached, outAbs); err != nil {
		return err
	}
	off := offline.Assets{
		CAPIVersion: capiVersion, Repository: filepath.Join(outAbs, "repository"),
		CertManager: filepath.Join(outAbs, "cert-issuer.yaml"), LoadBalancerImageRepository: haproxyRepo,
		LoadBalancerImageTag: haproxyTag, NodeImage: nodeImage,
	}
	for _, p := range providers() {
		t := providerTypes[p.label]
		off.Providers = append(off.Providers, offline.Provider{Name: t[0], Type: t[1],
			URL: "file://" + filepath.Join(off.Repository, p.label, capiVersion, p.components)})
	}
	imgs, err := filepath.Glob(filepath.Join(outAbs, "images", "*.tar"))
	if err != nil {
		return err
	}
	off.Images = imgs
	logf("providers: %s (clusterctl repository, images, cert-manager stand-in); load balancer %s", outAbs, lbTag)
	return offline.Write(filepath.Join(outAbs, "offline.json"), &off)
}

func writeProviders(root, out, capiVersion, key string) error {
	bin := filepath.Join(out, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	env := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-mod=mod -buildvcs=false"}
	ld := "-s -w -X sigs.k8s.io/cluster-api/version.gitVersion=" + capiVersion + " -X sigs.k8s.io/cluster-api/version.gitTreeState=clean"
	for _, p := range providers() {
		logf("  go build %s", p.pkg)
		if err := run(filepath.Join(root, capdModule), env, "go", "build", "-trimpath", "-ldflags", ld, "-o", filepath.Join(bin, p.binary), p.pkg); err != nil {
			return err
		}
	}
	logf("  go build ./hack/kindimage/certissuer")
	if err := run(root, env, "go", "build", "-trimpath", "-ldflags", "-s -w", "-o", filepath.Join(bin, "cert-issuer"), "./hack/kindimage/certissuer"); err != nil {
		return err
	}
	imagesDir := filepath.Join(out, "images")
	if err := os.MkdirAll(imagesDir, 0o755); err != nil {
		return err
	}
	meta, err := moduleDir(root, capiModule)
	if err != nil {
		return err
	}
	metadata, err := os.ReadFile(filepath.Join(meta, "metadata.yaml"))
	if err != nil {
		return err
	}
	for _, p := range providers() {
		ref := imagePrefix + p.image + ":" + capiVersion
		img, err := staticImage(filepath.Join(bin, p.binary), "/manager", []string{"/manager"}, capiVersion)
		if err != nil {
			return err
		}
		if err := ociArchive(filepath.Join(imagesDir, p.image+".tar"), []string{ref}, map[string]v1.Image{ref: img}); err != nil {
			return err
		}
		dir, err := moduleDir(root, p.module)
		if err != nil {
			return err
		}
		manifest, err := kustomizeWithImage(filepath.Join(dir, p.config), ref)
		if err != nil {
			return fmt.Errorf("%s: %w", p.label, err)
		}
		repo := filepath.Join(out, "repository", p.label, capiVersion)
		if err := os.MkdirAll(repo, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, p.components), manifest, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, "metadata.yaml"), metadata, 0o644); err != nil {
			return err
		}
	}
	ciRef := imagePrefix + "cert-issuer:" + key
	ci, err := staticImage(filepath.Join(bin, "cert-issuer"), "/cert-issuer", []string{"/cert-issuer"}, key)
	if err != nil {
		return err
	}
	if err := ociArchive(filepath.Join(imagesDir, "cert-issuer.tar"), []string{ciRef}, map[string]v1.Image{ciRef: ci}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "cert-issuer.yaml"), bytes.ReplaceAll(asset("cert-issuer.yaml"), []byte("IMAGE"), []byte(ciRef)), 0o644); err != nil {
		return err
	}
	return os.RemoveAll(bin)
}

// kustomizeWithImage builds a provider's config/default as its release does
// and sets its manager's image (kustomize's `controller:latest`) to ref.
func kustomizeWithImage(dir, ref string) ([]byte, error) {
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	replaced := 0
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		if m["kind"] == "Deployment" {
			spec, _ := m["spec"].(map[string]any)
			tmpl, _ := spec["template"].(map[string]any)
			pod, _ := tmpl["spec"].(map[string]any)
			cs, _ := pod["containers"].([]any)
			for _, c := range cs {
				if cm, _ := c.(map[string]any); cm["name"] == "manager" {
					cm["image"], cm["imagePullPolicy"] = ref, "IfNotPresent"
					replaced++
				}
			}
		}
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(b)
	}
	if replaced != 1 {
		return nil, fmt.Errorf("%d manager containers in %s, want 1", replaced, dir)
	}
	return out.Bytes(), nil
}

// haproxyConfig is the load balancer's configuration until CAPD writes its
// own and sends SIGHUP (haproxy's master reloads on it).
const haproxyConfig = `global
  log stdout format raw local0
  maxconn 100000

defaults
  mode tcp
  timeout connect 5s
  timeout client 50s
  timeout server 50s

frontend control-plane
  bind *:6443
  default_backend kube-apiservers

backend kube-apiservers
`

// haproxyEntrypoint is the one CAPD gives the container (it overrides the
// image's): haproxy's master in the foreground, reloading its workers on the
// SIGHUP CAPD sends after writing the configuration.
var haproxyEntrypoint = []string{"haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"}

// haproxyWrapper comes first in PATH as "haproxy" and caps maxconn with -n
// (which takes precedence over the file's): CAPD's configuration asks for
// 100000, which needs 200028 file descriptors, and an engine without
// CAP_SYS_RESOURCE gives containers 20000 at most (docs/kind-offline-findings.md,
// H5), so haproxy would refuse to start. exec keeps haproxy PID 1, so
// CAPD's signals reach it.
const haproxyWrapper = "#!/bin/sh\nexec /usr/sbin/haproxy -n 4000 \"$@\"\n"

func buildHaproxyRootfs(out string) error {
	args := []string{"--variant=minbase", "--include=" + strings.Join(HaproxyPackages, ","),
		`--aptopt=APT::Install-Recommends "false"`,
		"--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--format=tar", "bookworm", out + ".tmp"}
	return run("/", nil, "mmdebstrap", append(args, Sources...)...)
}

// loadHaproxy writes the load balancer image (Debian's haproxy in
// master-worker mode, foreground, with the config file CAPD rewrites) into
// the Docker engine: CAPD creates its container there.
func loadHaproxy(rootfs, inputs, tag string) error {
	base, err := tarball.LayerFromFile(rootfs)
	if err != nil {
		return err
	}
	cfgLayer, err := memLayer([]entry{
		{name: "usr/local/etc/haproxy/haproxy.cfg", mode: 0o644, data: []byte(haproxyConfig)},
		{name: "usr/local/sbin/haproxy", mode: 0o755, data: []byte(haproxyWrapper)},
	})
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, base, cfgLayer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	cf.Config.Env = []string{pathEnv}
	cf.Config.Entrypoint = haproxyEntrypoint
	cf.Config.StopSignal = "SIGUSR1" // haproxy's soft stop
	cf.Config.Labels = map[string]string{LabelInputs: inputs, "org.opencontainers.image.source": "https://github.com/flotilla-io/flotilla",
		"org.opencontainers.image.title": "CAPD load balancer built offline by hack/kindimage"}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	pr, pw := io.Pipe()
	cmd := exec.Command("docker", "load")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	werr := tarball.Write(ref, img, pw)
	pw.CloseWithError(werr)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("docker load: %w (writing: %v)", err, werr)
	}
	return werr
}

// pruneOthers removes cache entries with one of the prefixes but those kept.
func pruneOthers(cache string, prefixes []string, keep ...string) {
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Base(k)] = true
	}
	entries, _ := os.ReadDir(cache)
	for _, e := range entries {
		for _, p := range prefixes {
			if strings.HasPrefix(e.Name(), p) && !kept[e.Name()] {
				logf("pruning stale cache entry %s", e.Name())
				_ = os.RemoveAll(filepath.Join(cache, e.Name()))
			}
		}
	}
}

// copyTree copies src to dst, hard-linking files where it can.
func copyTree(src, dst string) error {
	return filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		t := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(t, 0o755)
		}
		if os.Link(p, t) == nil {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(t, b, info.Mode().Perm())
	})
}
