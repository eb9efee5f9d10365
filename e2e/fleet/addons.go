package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// addonLabel marks the Deployments of Flotilla's in-member add-ons
// (flotilla-estimator, flotilla-agent) in the manifests that enrolment
// installs through ClusterResourceSets.
const addonLabel = "app.kubernetes.io/part-of"

// addons runs, next to one member, the Flotilla add-ons that Cluster API's
// ClusterResourceSet controller installed into it. kwok only simulates Pods,
// so for each add-on Deployment it finds in the member it starts the binary
// its image names (bin/<image base name>) as a process, with the container's
// args and a kubeconfig holding a token of the Pod's own ServiceAccount: the
// add-on runs with exactly the configuration and RBAC a real install gets.
// Secret volumes the container mounts are written to a directory, as the
// kubelet projects them, and kept current while the add-on runs (a rotated
// Secret reaches it); args naming a path under a mount point name the same
// file in that directory.
type addons struct {
	member *Member
	binDir string
	dir    string

	mu      sync.Mutex
	running map[string]*addonProcess // by namespace/name of the Deployment
	closed  bool
}

type addonProcess struct {
	proc       *process
	generation int64
}

func newAddons(m *Member, binDir string) *addons {
	return &addons{member: m, binDir: binDir, dir: filepath.Join(m.Dir(), "addons"), running: map[string]*addonProcess{}}
}

// run reconciles the add-on processes every two seconds until ctx ends.
// Failures, retried every two seconds, are logged to the add-ons directory
// (addons.log), not to the terminal.
func (a *addons) run(ctx context.Context) {
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	logger, logFile, err := FileLogger(filepath.Join(a.dir, "addons.log"), 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet: add-ons of %s: %v\n", a.member.Name(), err)
	} else {
		defer logFile.Close()
	}
	for {
		if err := a.sync(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "Sync the add-on processes", "member", a.member.Name())
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (a *addons) sync(ctx context.Context) error {
	if a.member.Client == nil || a.member.healthy(ctx) != nil {
		return nil // the member's apiserver is down: add-ons keep running as they are
	}
	list := &appsv1.DeploymentList{}
	if err := a.member.Client.List(ctx, list, client.MatchingLabels{addonLabel: "flotilla"}); err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for i := range list.Items {
		d := &list.Items[i]
		key := d.Namespace + "/" + d.Name
		seen[key] = true
		a.mu.Lock()
		cur := a.running[key]
		a.mu.Unlock()
		if cur != nil && cur.generation == d.Generation && cur.proc.running() {
			if _, err := a.mountSecrets(ctx, d); err != nil {
				errs = append(errs, fmt.Errorf("add-on %s: %w", key, err))
			}
			continue
		}
		if cur != nil {
			_ = cur.proc.stop(5 * time.Second)
		}
		p, err := a.start(ctx, d)
		if err != nil {
			// E.g. a mounted Secret not delivered yet: the others start meanwhile.
			errs = append(errs, fmt.Errorf("add-on %s: %w", key, err))
			continue
		}
		a.mu.Lock()
		if a.closed { // stopped while this one started
			a.mu.Unlock()
			_ = p.stop(5 * time.Second)
			return nil
		}
		a.running[key] = &addonProcess{proc: p, generation: d.Generation}
		a.mu.Unlock()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for key, cur := range a.running {
		if !seen[key] {
			_ = cur.proc.stop(5 * time.Second)
			delete(a.running, key)
		}
	}
	return errors.Join(errs...)
}

// start runs the add-on of one Deployment as the Deployment's Pod would run.
func (a *addons) start(ctx context.Context, d *appsv1.Deployment) (*process, error) {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("no container")
	}
	c := d.Spec.Template.Spec.Containers[0]
	binary := filepath.Join(a.binDir, imageBaseName(c.Image))
	if _, err := os.Stat(binary); err != nil {
		return nil, fmt.Errorf("image %s: no binary %s (make build)", c.Image, binary)
	}
	sa := d.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	kubeconfig, err := a.serviceAccountKubeconfig(ctx, d.Namespace, sa)
	if err != nil {
		return nil, err
	}
	mounts, err := a.mountSecrets(ctx, d)
	if err != nil {
		return nil, err // a Pod would wait in ContainerCreating for its Secret
	}
	args := append([]string{"--kubeconfig=" + kubeconfig}, mountedPaths(c.Args, mounts)...)
	p := newProcess(d.Name, binary, a.dir, args...)
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			p.env = append(p.env, e.Name+"="+e.Value)
		}
	}
	p.env = append(p.env, "POD_NAMESPACE="+d.Namespace, "POD_NAME="+d.Name+"-fleet")
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

// serviceAccountKubeconfig writes a kubeconfig of the member that
// authenticates as the ServiceAccount, with a token from the TokenRequest API.
func (a *addons) serviceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{}
	if err := a.member.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, sa); err != nil {
		return "", fmt.Errorf("ServiceAccount %s/%s: %w", namespace, name, err)
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](24 * 3600)}}
	if err := a.member.Client.SubResource("token").Create(ctx, sa, tr); err != nil {
		return "", fmt.Errorf("token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	if err := os.MkdirAll(a.dir, 0o755); err != nil {
		return "", err
	}
	data, err := kubeconfigBytes(a.member.Name(), a.member.Server(), a.member.cp.caPEM, tr.Status.Token)
	if err != nil {
		return "", err
	}
	file := filepath.Join(a.dir, namespace+"-"+name+".kubeconfig")
	return file, os.WriteFile(file, data, 0o600)
}

// secretMount is a Secret volume of an add-on container: where the
// container mounts it, and the directory its files are written to.
type secretMount struct {
	mountPath, dir string
}

// mountSecrets writes the Secret volumes the Deployment's container mounts
// to <member>/addons/<namespace>-<deployment>/<volume>/, one file per key
// (or per item when the volume lists items), rewriting only files whose
// content changed, each in one rename.
func (a *addons) mountSecrets(ctx context.Context, d *appsv1.Deployment) ([]secretMount, error) {
	spec := d.Spec.Template.Spec
	var out []secretMount
	for _, vm := range spec.Containers[0].VolumeMounts {
		var source *corev1.SecretVolumeSource
		for _, v := range spec.Volumes {
			if v.Name == vm.Name {
				source = v.Secret
			}
		}
		if source == nil {
			continue
		}
		secret := &corev1.Secret{}
		if err := a.member.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: source.SecretName}, secret); err != nil {
			return nil, fmt.Errorf("Secret %s/%s mounted at %s: %w", d.Namespace, source.SecretName, vm.MountPath, err)
		}
		files := map[string][]byte{}
		if len(source.Items) == 0 {
			for k, v := range secret.Data {
				files[k] = v
			}
		}
		for _, item := range source.Items {
			files[item.Path] = secret.Data[item.Key]
		}
		dir := filepath.Join(a.dir, d.Namespace+"-"+d.Name, vm.Name)
		for name, data := range files {
			if err := writeIfChanged(filepath.Join(dir, name), data); err != nil {
				return nil, err
			}
		}
		out = append(out, secretMount{mountPath: strings.TrimSuffix(vm.MountPath, "/"), dir: dir})
	}
	return out, nil
}

// mountedPaths rewrites args so that a path at or under a mount point names
// the same file in the mount's directory, e.g.
// --hub-kubeconfig=/etc/flotilla/hub/kubeconfig → --hub-kubeconfig=<dir>/kubeconfig.
func mountedPaths(args []string, mounts []secretMount) []string {
	out := make([]string, 0, len(args))
	for _, arg := range args {
		for _, m := range mounts {
			i := strings.Index(arg, m.mountPath)
			if i < 0 {
				continue
			}
			rest := arg[i+len(m.mountPath):]
			if rest == "" || strings.HasPrefix(rest, "/") {
				arg = arg[:i] + m.dir + rest
				break
			}
		}
		out = append(out, arg)
	}
	return out
}

// writeIfChanged replaces a file's content in one rename, and only when it
// differs, so that a reader polling the file sees whole versions.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// processes lists the running add-on processes, sorted by Deployment.
func (a *addons) processes() []*process {
	a.mu.Lock()
	defer a.mu.Unlock()
	keys := make([]string, 0, len(a.running))
	for k := range a.running {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*process, 0, len(keys))
	for _, k := range keys {
		out = append(out, a.running[k].proc)
	}
	return out
}

func (a *addons) stop() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	for _, p := range a.processes() {
		_ = p.stop(5 * time.Second)
	}
}

// imageBaseName is "flotilla-estimator" for ghcr.io/flotilla-io/flotilla-estimator:v0.1.0.
func imageBaseName(image string) string {
	base := path.Base(image)
	if i := strings.IndexAny(base, ":@"); i >= 0 {
		base = base[:i]
	}
	return base
}
