package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

//go:embed assets
var assets embed.FS

const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var epoch = time.Unix(0, 0).UTC()

// entry is one tar member: a file copied from src, literal data, a symlink or a folder.
type entry struct {
	name string // without leading slash
	mode int64
	src  string
	data []byte
	link string
	dir  bool
}

func asset(name string) []byte {
	b, err := assets.ReadFile("assets/" + name)
	if err != nil {
		panic(err)
	}
	return b
}

// writeTar writes entries, each preceded by its missing parent folders.
func writeTar(w io.Writer, entries []entry) error {
	tw := tar.NewWriter(w)
	dirs := map[string]bool{}
	var mkdir func(d string, mode int64) error
	mkdir = func(d string, mode int64) error {
		if d == "." || d == "" || dirs[d] {
			return nil
		}
		if err := mkdir(path.Dir(d), 0o755); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Name: d + "/", Mode: mode, Typeflag: tar.TypeDir, ModTime: epoch, Format: tar.FormatPAX})
	}
	for _, e := range entries {
		if e.dir {
			if err := mkdir(e.name, e.mode); err != nil {
				return err
			}
			continue
		}
		if err := mkdir(path.Dir(e.name), 0o755); err != nil {
			return err
		}
		h := &tar.Header{Name: e.name, Mode: e.mode, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case e.link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.link
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
		case e.src != "":
			f, err := os.Open(e.src)
			if err != nil {
				return err
			}
			st, err := f.Stat()
			if err != nil {
				f.Close()
				return err
			}
			h.Typeflag, h.Size = tar.TypeReg, st.Size()
			if err := tw.WriteHeader(h); err != nil {
				f.Close()
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return err
			}
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := tw.Write(e.data); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func memLayer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	if err := writeTar(&buf, entries); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
}

// image is layers with a config; version goes to org.opencontainers.image.version.
func image(layers []v1.Layer, entrypoint []string, version string) (v1.Image, error) {
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), layers...)
	if err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	cf.Config.Env = []string{pathEnv}
	cf.Config.Entrypoint = entrypoint
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/flotilla-io/flotilla",
		"org.opencontainers.image.title":   "built offline by hack/kindimage",
	}
	return mutate.ConfigFile(img, cf)
}

// ociArchive writes an OCI image layout holding imgs (by name) as a tar, the
// form `ctr images import` reads.
func ociArchive(out string, refs []string, imgs map[string]v1.Image) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	for _, ref := range refs {
		if err := p.AppendImage(imgs[ref], layout.WithPlatform(v1.Platform{OS: "linux", Architecture: "amd64"}),
			layout.WithAnnotations(map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref})); err != nil {
			return err
		}
	}
	var entries []entry
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			entries = append(entries, entry{name: rel, mode: 0o755, dir: true})
		} else {
			entries = append(entries, entry{name: rel, mode: 0o644, src: p})
		}
		return nil
	})
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	if err := writeTar(f, entries); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// staticImage is one binary on an empty base (with /tmp, /etc, /var/run).
func staticImage(bin, at string, entrypoint []string, version string) (v1.Image, error) {
	l, err := memLayer([]entry{
		{name: "tmp", mode: 0o1777, dir: true}, {name: "etc", mode: 0o755, dir: true}, {name: "var/run", mode: 0o755, dir: true},
		{name: strings.TrimPrefix(at, "/"), mode: 0o755, src: bin},
	})
	if err != nil {
		return nil, err
	}
	return image([]v1.Layer{l}, entrypoint, version)
}

// writeImages writes the images kubeadm and the CNI run, one OCI archive each
// (the two on the Debian rootfs share one archive and its base layer).
func writeImages(root, rootfs, bin, out string, v versions) error {
	if err := os.MkdirAll(out+".tmp", 0o755); err != nil {
		return err
	}
	b := func(n string) string { return filepath.Join(bin, n) }
	etcdTag := strings.TrimPrefix(v.etcd, "v") + "-0"
	type static struct {
		file, bin, at, version string
		refs                   []string
		entrypoint             []string
	}
	k8s := "registry.k8s.io/"
	statics := []static{
		{"pause", "pause", "/pause", PauseTag, []string{k8s + "pause:" + PauseTag}, []string{"/pause"}},
		{"kube-apiserver", "kube-apiserver", "/usr/local/bin/kube-apiserver", KubeVersion, []string{k8s + "kube-apiserver:" + KubeVersion}, []string{"/usr/local/bin/kube-apiserver"}},
		{"kube-controller-manager", "kube-controller-manager", "/usr/local/bin/kube-controller-manager", KubeVersion, []string{k8s + "kube-controller-manager:" + KubeVersion}, []string{"/usr/local/bin/kube-controller-manager"}},
		{"kube-scheduler", "kube-scheduler", "/usr/local/bin/kube-scheduler", KubeVersion, []string{k8s + "kube-scheduler:" + KubeVersion}, []string{"/usr/local/bin/kube-scheduler"}},
		// kubeadm v1.36.3 asks for etcd 3.6.8-0; the project pins 3.6.16 (hack/tools/etcd). The image
		// carries both tags, so neither kind nor CAPD needs an etcd imageTag patch.
		{"etcd", "etcd", "/usr/local/bin/etcd", v.etcd, []string{k8s + "etcd:" + etcdTag, k8s + "etcd:" + KubeadmEtcdTag}, []string{"/usr/local/bin/etcd"}},
		{"coredns", "coredns", "/coredns", v.coredns, []string{k8s + "coredns/coredns:" + CoreDNSTag}, []string{"/coredns"}},
	}
	for _, s := range statics {
		img, err := staticImage(b(s.bin), s.at, s.entrypoint, s.version)
		if err != nil {
			return err
		}
		imgs := map[string]v1.Image{}
		for _, r := range s.refs {
			imgs[r] = img
		}
		if err := ociArchive(filepath.Join(out+".tmp", s.file+".tar"), s.refs, imgs); err != nil {
			return fmt.Errorf("%s: %w", s.file, err)
		}
	}
	// kube-proxy calls nft, iptables and conntrack; the route agent ip, iptables and kubectl.
	base, err := tarball.LayerFromFile(rootfs, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestSpeed))
	if err != nil {
		return err
	}
	proxyLayer, err := memLayer([]entry{{name: "usr/local/bin/kube-proxy", mode: 0o755, src: b("kube-proxy")}})
	if err != nil {
		return err
	}
	routesLayer, err := memLayer([]entry{
		{name: "usr/local/bin/kubectl", mode: 0o755, src: b("kubectl")},
		{name: "usr/local/bin/kind-routes", mode: 0o755, data: asset("kind-routes.sh")},
	})
	if err != nil {
		return err
	}
	proxy, err := image([]v1.Layer{base, proxyLayer}, []string{"/usr/local/bin/kube-proxy"}, KubeVersion)
	if err != nil {
		return err
	}
	routes, err := image([]v1.Layer{base, routesLayer}, []string{"/usr/local/bin/kind-routes"}, "v1")
	if err != nil {
		return err
	}
	proxyRef := k8s + "kube-proxy:" + KubeVersion
	return ociArchive(filepath.Join(out+".tmp", "debian-based.tar"), []string{proxyRef, KindRoutesImage},
		map[string]v1.Image{proxyRef: proxy, KindRoutesImage: routes})
}

// nodeEntries is what the node image adds to the rootfs.
func nodeEntries(bin, images string) ([]entry, error) {
	x := func(at, binName string) entry { return entry{name: at, mode: 0o755, src: filepath.Join(bin, binName)} }
	f := func(at, assetName string, mode int64) entry {
		return entry{name: at, mode: mode, data: asset(assetName)}
	}
	es := []entry{
		x("usr/local/bin/containerd", "containerd"), x("usr/local/bin/ctr", "ctr"),
		x("usr/local/bin/containerd-shim-runc-v2", "containerd-shim-runc-v2"), x("usr/local/bin/crictl", "crictl"),
		x("usr/bin/kubelet", "kubelet"), x("usr/bin/kubeadm", "kubeadm"), x("usr/bin/kubectl", "kubectl"),
		f("usr/local/bin/entrypoint", "entrypoint", 0o755), f("usr/local/bin/dns-magic", "dns-magic", 0o755),
		f("etc/containerd/config.toml", "config.toml", 0o644), f("etc/crictl.yaml", "crictl.yaml", 0o644),
		f("etc/sysctl.d/10-network-magic.conf", "10-network-magic.conf", 0o644),
		f("etc/systemd/system/containerd.service", "containerd.service", 0o644),
		f("etc/systemd/system/kubelet.service", "kubelet.service", 0o644),
		f("etc/systemd/system/kubelet.service.d/10-kubeadm.conf", "10-kubeadm.conf", 0o644),
		f("etc/systemd/system/kind-preload.service", "kind-preload.service", 0o644),
		// kubelet 1.35+ refuses cgroup v1 unless told; kind and CAPD read this file through 10-kubeadm.conf.
		{name: "etc/default/kubelet", mode: 0o644, data: []byte("KUBELET_EXTRA_ARGS=--fail-cgroupv1=false\n")},
		{name: "kind/version", mode: 0o644, data: []byte(KubeVersion + "\n")},
		f("kind/manifests/default-cni.yaml", "default-cni.yaml", 0o644),
		{name: "etc/kubernetes/manifests", mode: 0o755, dir: true}, {name: "opt/cni/bin", mode: 0o755, dir: true},
		{name: "etc/cni/net.d", mode: 0o755, dir: true},
	}
	for _, u := range []string{"containerd", "kubelet", "kind-preload"} {
		es = append(es, entry{name: "etc/systemd/system/multi-user.target.wants/" + u + ".service", mode: 0o777, link: "/etc/systemd/system/" + u + ".service"})
	}
	for _, u := range []string{"systemd-binfmt.service", "getty@tty1.service", "console-getty.service"} {
		es = append(es, entry{name: "etc/systemd/system/" + u, mode: 0o777, link: "/dev/null"})
	}
	archives, err := filepath.Glob(filepath.Join(images, "*.tar"))
	if err != nil {
		return nil, err
	}
	sort.Strings(archives)
	for _, a := range archives {
		es = append(es, entry{name: "kind/images/" + filepath.Base(a), mode: 0o644, src: a})
	}
	return es, nil
}

func writeNodeLayer(root, bin, images, out string) error {
	es, err := nodeEntries(bin, images)
	if err != nil {
		return err
	}
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	if err := writeTar(f, es); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// nodeImage is the rootfs and the node layer with kind's node config:
// systemd as PID 1 behind the project's entrypoint, stopped by SIGRTMIN+3.
func nodeImage(rootfs, layer, inputs string, v versions) (v1.Image, error) {
	var ls []v1.Layer
	for _, p := range []string{rootfs, layer} {
		l, err := tarball.LayerFromFile(p, tarball.WithCompressionLevel(gzip.BestSpeed))
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
	}
	img, err := mutate.AppendLayers(empty.Image, ls...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	cf.Config.Entrypoint = []string{"/usr/local/bin/entrypoint", "/sbin/init"}
	cf.Config.Env = []string{"container=docker", pathEnv}
	cf.Config.StopSignal = "SIGRTMIN+3"
	cf.Config.Labels = map[string]string{
		LabelInputs:                        inputs,
		"io.flotilla.kindimage.kubernetes": KubeVersion,
		"io.flotilla.kindimage.containerd": v.containerd,
		"io.flotilla.kindimage.crictl":     v.crictl,
		"io.flotilla.kindimage.etcd":       v.etcd,
		"io.flotilla.kindimage.coredns":    v.coredns,
		"org.opencontainers.image.source":  "https://github.com/flotilla-io/flotilla",
	}
	return mutate.ConfigFile(img, cf)
}

// loadNode streams the node image as a docker-archive (Docker 20.10 cannot
// load an OCI layout) into `docker load`, under both tags.
func loadNode(rootfs, layer, inputs string, v versions, tags ...string) error {
	img, err := nodeImage(rootfs, layer, inputs, v)
	if err != nil {
		return err
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return err
		}
		refs[ref] = img
	}
	pr, pw := io.Pipe()
	cmd := exec.Command("docker", "load")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pr, os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	werr := tarball.MultiRefWrite(refs, pw)
	pw.CloseWithError(werr)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("docker load: %w (writing: %v)", err, werr)
	}
	return werr
}
