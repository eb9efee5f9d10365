// Command kindimage builds Flotilla's kind node image without any registry
// (`make kind-node-image`): a Debian bookworm rootfs from Debian's packages
// (mmdebstrap), containerd, ctr, crictl, kubelet, kubeadm and kubectl built
// from the Go module proxy at the versions hack/tools pins, and the
// control-plane images kubeadm lists (kube-apiserver, kube-controller-manager,
// kube-scheduler, kube-proxy, etcd, CoreDNS, pause) plus the route agent of
// its bridge CNI, written as OCI archives that the node imports into its
// containerd at first boot. The image is loaded into the local Docker engine
// as flotilla-kind/node:<kube version>-<hash of every input> and tagged
// flotilla-kind/node:<kube version>; a run whose inputs are unchanged only
// checks that tag and takes seconds. It prints the image's name on stdout.
//
// Why each piece is as it is (cgroup v1, no CAP_SYS_RESOURCE, fuse-overlayfs
// root, no IPVS, no kindnetd): docs/kind-offline-findings.md. How to use it:
// docs/development.md, "kind without a registry".
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// KubeVersion is the Kubernetes of hack/tools/kube and hack/tools/kindnode.
const KubeVersion = "v1.36.3"

// Tags kubeadm v1.36.3 asks for (`kubeadm config images list`).
const (
	PauseTag        = "3.10.2"
	KubeadmEtcdTag  = "3.6.8-0"
	CoreDNSTag      = "v1.14.2"
	KindRoutesImage = "docker.io/flotilla-kind/kind-routes:v1"
	DefaultRepo     = "flotilla-kind/node"
	LabelInputs     = "io.flotilla.kindimage.inputs"
)

type options struct {
	root, cache, repo, providers string
	rebuild, keep, providersOnly bool
}

func main() {
	var o options
	flag.StringVar(&o.root, "root", ".", "the repository's root")
	flag.StringVar(&o.cache, "cache", defaultCache(), "folder for the rootfs, the binaries and the image archives between runs")
	flag.StringVar(&o.repo, "repo", DefaultRepo, "repository of the node image in the local engine")
	flag.BoolVar(&o.rebuild, "rebuild", false, "build and load the image even if the engine has it (the rootfs and binaries caches are still used)")
	flag.BoolVar(&o.keep, "keep", false, "keep the node image's layer tar in the cache after loading")
	flag.StringVar(&o.providers, "providers", "", "also build what a registry-less management cluster runs (Cluster API's core, kubeadm and Docker (CAPD) providers, the cert-manager stand-in, CAPD's haproxy load balancer) and write its clusterctl repository, image archives and offline.json into this folder")
	flag.BoolVar(&o.providersOnly, "providers-only", false, "with -providers: build only those, naming the node image <repo>:<kube version> without building it")
	flag.Parse()
	lowPriority()
	start := time.Now()
	var img string
	var err error
	if o.providersOnly {
		img = o.repo + ":" + KubeVersion
	} else {
		img, err = o.run()
	}
	if err == nil && o.providers != "" {
		err = o.buildProviders(o.root, o.providers, img)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kindimage:", err)
		os.Exit(1)
	}
	logf("%s ready in %s", what(o, img), time.Since(start).Round(time.Second))
	fmt.Println(img)
}

func what(o options, img string) string {
	switch {
	case o.providersOnly:
		return "providers (node image not built: " + img + ")"
	case o.providers != "":
		return img + " and providers"
	}
	return img
}

func defaultCache() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "flotilla", "kindimage")
	}
	return filepath.Join(os.TempDir(), "flotilla-kindimage")
}

// lowPriority makes this process and every build it starts nice 10 and of
// the lowest best-effort I/O priority: the machines are shared. (Nice 19 and
// the idle I/O class, tried first, starved: mmdebstrap took 30 min instead of
// 2 beside another engineer's builds at load 15.)
func lowPriority() {
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, 0, 10)
	const ioprioWhoProcess, ioprioClassBestEffort, lowest = 1, 2, 7
	_, _, _ = syscall.Syscall(syscall.SYS_IOPRIO_SET, ioprioWhoProcess, 0, ioprioClassBestEffort<<13|lowest)
}

func (o options) run() (string, error) {
	root, err := filepath.Abs(o.root)
	if err != nil {
		return "", err
	}
	goVersion, err := output(root, nil, "go", "env", "GOVERSION")
	if err != nil {
		return "", err
	}
	rootfsKey := hashStrings("rootfs/v1", strings.Join(Packages, ","), strings.Join(Sources, "\n"), rootfsHook)
	binKey, err := hashTree(root, append(binaryInputs(), "go:"+goVersion, fmt.Sprint(binaries()))...)
	if err != nil {
		return "", err
	}
	// The node's own inputs only: editing the providers' code does not rebuild it.
	imageKey, err := hashTree(root, "hack/kindimage/assets", "hack/kindimage/images.go", "hack/kindimage/build.go", "rootfs:"+rootfsKey, "bin:"+binKey)
	if err != nil {
		return "", err
	}
	tag := fmt.Sprintf("%s:%s-%s", o.repo, KubeVersion, imageKey[:12])
	moving := o.repo + ":" + KubeVersion
	if !o.rebuild {
		if id, err := output(root, nil, "docker", "image", "inspect", "--format", "{{index .Config.Labels \""+LabelInputs+"\"}}", tag); err == nil && id == imageKey {
			logf("%s is in the engine (inputs %s): nothing to build", tag, imageKey[:12])
			return moving, run(root, nil, "docker", "tag", tag, moving)
		}
	}
	if err := os.MkdirAll(o.cache, 0o755); err != nil {
		return "", err
	}
	rootfs := filepath.Join(o.cache, "rootfs-"+rootfsKey[:16]+".tar")
	if err := o.step("rootfs", func() error { return buildRootfs(rootfs) }, rootfs); err != nil {
		return "", err
	}
	bin := filepath.Join(o.cache, "bin-"+binKey[:16])
	if err := o.step("binaries", func() error { return buildBinaries(root, bin) }, bin); err != nil {
		return "", err
	}
	v, err := readVersions(root)
	if err != nil {
		return "", err
	}
	images := filepath.Join(o.cache, "images-"+imageKey[:16])
	if err := o.step("control-plane images", func() error { return writeImages(root, rootfs, bin, images, v) }, images); err != nil {
		return "", err
	}
	layer := filepath.Join(o.cache, "node-"+imageKey[:16]+".tar")
	if err := o.step("node layer", func() error { return writeNodeLayer(root, bin, images, layer) }, layer); err != nil {
		return "", err
	}
	if err := timed("docker load", func() error { return loadNode(rootfs, layer, imageKey, v, tag, moving) }); err != nil {
		return "", err
	}
	if !o.keep {
		_ = os.Remove(layer)
	}
	prune(o.cache, rootfs, bin, images, layer)
	return moving, nil
}

// step builds out unless it exists; builders write to out+".tmp" and rename.
func (o options) step(what string, build func() error, out string) error {
	if _, err := os.Stat(out); err == nil {
		logf("%s: cached %s", what, out)
		return nil
	}
	_ = os.RemoveAll(out + ".tmp")
	if err := timed(what, build); err != nil {
		_ = os.RemoveAll(out + ".tmp")
		return fmt.Errorf("%s: %w", what, err)
	}
	return os.Rename(out+".tmp", out)
}

func timed(what string, f func() error) error {
	s := time.Now()
	logf("%s ...", what)
	err := f()
	if err == nil {
		logf("%s: done in %s", what, time.Since(s).Round(time.Second))
	}
	return err
}

// prune removes cache entries other than the ones of this run.
func prune(cache string, keep ...string) {
	entries, _ := os.ReadDir(cache)
	kept := map[string]bool{}
	for _, k := range keep {
		kept[filepath.Base(k)] = true
	}
	for _, e := range entries {
		n := e.Name()
		if !kept[n] && (strings.HasPrefix(n, "rootfs-") || strings.HasPrefix(n, "bin-") || strings.HasPrefix(n, "images-") || strings.HasPrefix(n, "node-")) {
			logf("pruning stale cache entry %s", n)
			_ = os.RemoveAll(filepath.Join(cache, n))
		}
	}
}

// hashTree hashes the files under the given repository paths (folders are
// walked) and the literal strings among them (those holding a colon).
func hashTree(root string, inputs ...string) (string, error) {
	h := sha256.New()
	for _, in := range inputs {
		if strings.Contains(in, ":") {
			fmt.Fprintf(h, "literal %s\n", in)
			continue
		}
		var files []string
		err := filepath.WalkDir(filepath.Join(root, in), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				return "", err
			}
			rel, _ := filepath.Rel(root, f)
			fmt.Fprintf(h, "file %s %o\n", rel, st.Mode().Perm()&0o111)
			r, err := os.Open(f)
			if err != nil {
				return "", err
			}
			_, err = io.Copy(h, r)
			r.Close()
			if err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func hashStrings(s ...string) string {
	h := sha256.New()
	for _, v := range s {
		fmt.Fprintf(h, "%d:%s\n", len(v), v)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func run(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return nil
}

func output(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kindimage: "+format+"\n", args...)
}
