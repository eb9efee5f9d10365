package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Packages of the node's Debian bookworm rootfs: systemd 252 (257 and later
// refuse cgroup v1), what kubelet, kubeadm, kube-proxy and the CNI call, and
// Debian's runc and CNI plugins.
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", "iptables", "nftables", "conntrack", "iproute2", "ethtool",
	"util-linux", "mount", "kmod", "libseccomp2", "pigz", "ca-certificates", "procps", "runc",
	"fuse-overlayfs", "containernetworking-plugins", "socat", "ebtables", "less", "iputils-ping",
}

// Sources are the rootfs's apt sources.
var Sources = []string{
	"deb http://deb.debian.org/debian bookworm main",
	"deb http://deb.debian.org/debian bookworm-updates main",
	"deb http://deb.debian.org/debian-security bookworm-security main",
}

// rootfsHook prunes systemd for a container, as kind's base image does: no
// unit is wanted but those the node layer enables, no tmpfiles setup at
// boot, no kernel log reading. $1 is the rootfs.
const rootfsHook = `set -e
rm -f "$1"/lib/systemd/system/multi-user.target.wants/* "$1"/etc/systemd/system/*.wants/* \
  "$1"/lib/systemd/system/local-fs.target.wants/* "$1"/lib/systemd/system/sockets.target.wants/*udev* \
  "$1"/lib/systemd/system/sockets.target.wants/*initctl* "$1"/lib/systemd/system/basic.target.wants/* \
  "$1"/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service
echo ReadKMsg=no >> "$1"/etc/systemd/journald.conf`

func buildRootfs(out string) error {
	if _, err := output("/", nil, "mmdebstrap", "--version"); err != nil {
		return fmt.Errorf("mmdebstrap is needed (apt-get install mmdebstrap): %w", err)
	}
	args := []string{"--variant=minbase", "--include=" + strings.Join(Packages, ","),
		`--aptopt=APT::Install-Recommends "false"`,
		"--dpkgopt=path-exclude=/usr/share/doc/*", "--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--customize-hook=" + rootfsHook,
		"--format=tar", "bookworm", out + ".tmp"}
	return run("/", nil, "mmdebstrap", append(args, Sources...)...)
}

// binary is one static linux/amd64 executable of the image.
type binary struct {
	name, module, pkg string // module: folder of the Go module it is built in
	ldflags           string
}

func kubeLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(KubeVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	p := "k8s.io/component-base/version."
	return strings.Join([]string{"-X " + p + "gitVersion=" + KubeVersion, "-X " + p + "gitMajor=" + major,
		"-X " + p + "gitMinor=" + minor, "-X " + p + "gitTreeState=clean",
		"-X " + p + "gitCommit=0000000000000000000000000000000000000000",
		"-X " + p + "buildDate=1970-01-01T00:00:00Z"}, " ")
}

// binaries lists what is built; {containerd} and {crictl} in ldflags are
// replaced by the versions their tools modules pin.
func binaries() []binary {
	var bs []binary
	for _, c := range []string{"kubelet", "kubeadm", "kubectl", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
		bs = append(bs, binary{c, "hack/tools/kindnode", "k8s.io/kubernetes/cmd/" + c, kubeLDFlags()})
	}
	for _, c := range []string{"containerd", "ctr", "containerd-shim-runc-v2"} {
		bs = append(bs, binary{c, "hack/tools/containerd", "github.com/containerd/containerd/v2/cmd/" + c,
			"-X github.com/containerd/containerd/v2/version.Version={containerd}"})
	}
	return append(bs,
		binary{"crictl", "hack/tools/crictl", "sigs.k8s.io/cri-tools/cmd/crictl", "-X sigs.k8s.io/cri-tools/pkg/version.Version={crictl}"},
		binary{"coredns", "hack/tools/coredns", "github.com/coredns/coredns", ""},
		binary{"etcd", "hack/tools/etcd", "./cmd/etcd", ""},
		binary{"pause", ".", "./hack/kindimage/pause", "-X main.Version=" + PauseTag},
	)
}

// binaryInputs are the repository paths the binaries are built from.
func binaryInputs() []string {
	return []string{"hack/tools/kindnode", "hack/tools/containerd", "hack/tools/crictl", "hack/tools/coredns", "hack/tools/etcd", "hack/kindimage/pause"}
}

// versions are the pinned versions the images are tagged and labelled with.
type versions struct{ containerd, crictl, etcd, coredns string }

func readVersions(root string) (versions, error) {
	var v versions
	for _, q := range []struct {
		dst         *string
		dir, module string
	}{
		{&v.containerd, "hack/tools/containerd", "github.com/containerd/containerd/v2"},
		{&v.crictl, "hack/tools/crictl", "sigs.k8s.io/cri-tools"},
		{&v.etcd, "hack/tools/etcd", "go.etcd.io/etcd/server/v3"},
		{&v.coredns, "hack/tools/coredns", "github.com/coredns/coredns"},
	} {
		out, err := output(filepath.Join(root, q.dir), []string{"GOFLAGS=-mod=mod -buildvcs=false"}, "go", "list", "-m", "-f", "{{.Version}}", q.module)
		if err != nil {
			return v, err
		}
		*q.dst = out
	}
	return v, nil
}

func buildBinaries(root, out string) error {
	v, err := readVersions(root)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out+".tmp", 0o755); err != nil {
		return err
	}
	r := strings.NewReplacer("{containerd}", v.containerd, "{crictl}", v.crictl)
	for _, b := range binaries() {
		dst := filepath.Join(out+".tmp", b.name)
		logf("  go build %s (%s)", b.pkg, b.module)
		if err := run(filepath.Join(root, b.module), []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=-mod=mod -buildvcs=false"},
			"go", "build", "-trimpath", "-ldflags", strings.TrimSpace("-s -w "+r.Replace(b.ldflags)), "-o", dst, b.pkg); err != nil {
			return err
		}
	}
	return nil
}
