package kindfleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/config"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-io/flotilla/internal/hubscheme"
)

// initProviders runs `clusterctl init --infrastructure docker --addon
// flotilla`: Cluster API, kubeadm and CAPD from their releases (clusterctl's
// built-in provider list), Flotilla from the local repository.
func (f *Fleet) initProviders(ctx context.Context) error {
	components := filepath.Join(f.opts.Repository, "addon-flotilla", f.opts.Version, "addon-components.yaml")
	providers := []map[string]string{{"name": "flotilla", "url": "file://" + components, "type": "AddonProvider"}}
	if f.offline != nil {
		// Cluster API's core, kubeadm and Docker providers from the local
		// repository hack/kindimage wrote, at the version of go.mod.
		for _, p := range f.offline.Providers {
			providers = append(providers, map[string]string{"name": p.Name, "url": p.URL, "type": p.Type})
		}
	}
	cfg, err := yaml.Marshal(map[string]any{"providers": providers})
	if err != nil {
		return err
	}
	path := filepath.Join(f.opts.Dir, "clusterctl.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return err
	}
	c, err := clusterctl.New(ctx, path)
	if err != nil {
		return err
	}
	f.opts.progress("clusterctl init --infrastructure docker --addon flotilla (Flotilla from %s)", components)
	_, err = c.Init(ctx, clusterctl.InitOptions{
		Kubeconfig:              clusterctl.Kubeconfig{Path: f.HubKubeconfig},
		InfrastructureProviders: []string{"docker"},
		AddonProviders:          []string{"flotilla"},
		WaitProviders:           true,
		WaitProviderTimeout:     10 * time.Minute,
	})
	if err != nil {
		return fmt.Errorf("clusterctl init: %w", err)
	}
	return nil
}

// createMember generates a workload cluster from the flotilla template, as
// `clusterctl generate cluster <name> --from templates/cluster-template-flotilla.yaml`
// does, and creates its objects on the hub.
func (f *Fleet) createMember(ctx context.Context, spec MemberSpec) error {
	reader := config.NewMemoryReader()
	reader.Set("FLOTILLA_REGION", spec.Region)
	reader.Set("FLOTILLA_ZONE", spec.Zone)
	if f.offline != nil {
		reader.Set("CAPD_NODE_IMAGE", f.opts.NodeImage)
		reader.Set("CAPD_LB_IMAGE_REPOSITORY", f.offline.LoadBalancerImageRepository)
		reader.Set("CAPD_LB_IMAGE_TAG", f.offline.LoadBalancerImageTag)
		// The offline node image runs on cgroup v1 hosts too, where kubeadm's
		// SystemVerification refuses; kind skips preflight, CAPD does not.
		reader.Set("KUBEADM_IGNORE_PREFLIGHT_ERRORS", "[SystemVerification]")
	}
	cfg, err := config.New(ctx, "", config.InjectReader(reader))
	if err != nil {
		return err
	}
	c, err := clusterctl.New(ctx, "", clusterctl.InjectConfig(cfg))
	if err != nil {
		return err
	}
	tmpl, err := c.GetClusterTemplate(ctx, clusterctl.GetClusterTemplateOptions{
		Kubeconfig:               clusterctl.Kubeconfig{Path: f.HubKubeconfig},
		URLSource:                &clusterctl.URLSourceOptions{URL: filepath.Join(f.opts.RepoRoot, "templates", "cluster-template-flotilla.yaml")},
		ClusterName:              spec.Name,
		TargetNamespace:          f.opts.Namespace,
		KubernetesVersion:        f.opts.KubernetesVersion,
		ControlPlaneMachineCount: ptr.To[int64](1),
		WorkerMachineCount:       ptr.To[int64](1),
	})
	if err != nil {
		return fmt.Errorf("generate cluster %s: %w", spec.Name, err)
	}
	if err := f.ensureNamespace(ctx, f.opts.Namespace); err != nil {
		return err
	}
	f.opts.progress("creating workload cluster %s/%s (Kubernetes %s, region %s, zone %s)", f.opts.Namespace, spec.Name, f.opts.KubernetesVersion, spec.Region, spec.Zone)
	for _, o := range tmpl.Objs() {
		// clusterctl init returns when the providers' Deployments are
		// available, which can be a moment before their webhooks' Services
		// have endpoints: retry what their webhooks refuse for that reason.
		var err error
		_ = wait.PollUntilContextTimeout(ctx, 2*time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			err = f.Hub.Create(ctx, o.DeepCopy())
			if err == nil || apierrors.IsAlreadyExists(err) {
				err = nil
				return true, nil
			}
			return !apierrors.IsInternalError(err) && !apierrors.IsServiceUnavailable(err), nil
		})
		if err != nil {
			return fmt.Errorf("create %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	f.Members = append(f.Members, &Member{Spec: spec, Namespace: f.opts.Namespace})
	return nil
}

func (f *Fleet) ensureNamespace(ctx context.Context, name string) error {
	err := f.Hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// waitMember waits until the member's CAPI Cluster is Available and each of
// its Machines has a Node, then loads Flotilla's images into its nodes (the
// estimator's Pods, installed by a ClusterResourceSet, use them) and makes a
// client of it from Cluster API's kubeconfig Secret.
func (f *Fleet) waitMember(ctx context.Context, m *Member, timeout time.Duration) error {
	f.opts.progress("waiting for workload cluster %s to be Available", m.Spec.Name)
	err := wait.PollUntilContextTimeout(ctx, 5*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		cluster := &capiv1.Cluster{}
		if err := f.Hub.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Name}, cluster); err != nil {
			return false, nil
		}
		if !conditions.IsTrue(cluster, capiv1.AvailableCondition) {
			return false, nil
		}
		machines := &capiv1.MachineList{}
		if err := f.Hub.List(ctx, machines, client.InNamespace(m.Namespace), client.MatchingLabels{capiv1.ClusterNameLabel: m.Spec.Name}); err != nil {
			return false, nil
		}
		for _, machine := range machines.Items {
			if !machine.Status.NodeRef.IsDefined() {
				return false, nil
			}
		}
		return len(machines.Items) >= 2, nil
	})
	if err != nil {
		return fmt.Errorf("workload cluster %s not Available with all its Machines' Nodes within %s: %w", m.Spec.Name, timeout, err)
	}
	if m.Client, err = f.memberClient(ctx, m); err != nil {
		return err
	}
	// CAPD labels its containers as kind does; the load balancer is not a node.
	nodes, err := f.provider().ListInternalNodes(m.Spec.Name)
	if err != nil {
		return err
	}
	for _, image := range f.opts.Images {
		for _, n := range nodes {
			if err := loadArchive(n, image); err != nil {
				return fmt.Errorf("load %s into %s: %w", image, n, err)
			}
		}
	}
	// Pods that tried before the images were there back off for minutes:
	// new ones start at once.
	return m.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("flotilla-system"))
}

func (f *Fleet) memberClient(ctx context.Context, m *Member) (client.Client, error) {
	secret := &corev1.Secret{}
	if err := f.Hub.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Name + "-kubeconfig"}, secret); err != nil {
		return nil, fmt.Errorf("kubeconfig of %s: %w", m.Spec.Name, err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data["value"])
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: hubscheme.New()})
}

// StopControlPlane removes the member's control-plane machine containers:
// the machines are gone for good, as when a host dies; Cluster API reports
// the cluster unreachable and its control plane unavailable.
func (f *Fleet) StopControlPlane(ctx context.Context, member string) error {
	names, err := containers(ctx, map[string]string{"io.x-k8s.kind.cluster": member, "io.x-k8s.kind.role": "control-plane"})
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no control-plane container of %s", member)
	}
	f.opts.progress("removing the control-plane containers of %s: %v", member, names)
	return removeContainers(ctx, names)
}

// DeleteCluster deletes the member's CAPI Cluster.
func (f *Fleet) DeleteCluster(ctx context.Context, member string) error {
	m := f.Member(member)
	if m == nil {
		return fmt.Errorf("no member %s", member)
	}
	return client.IgnoreNotFound(f.Hub.Delete(ctx, &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: member}}))
}

// deleteMembers deletes every member's CAPI Cluster and waits for CAPD to
// remove its containers; what is left after the timeout is removed by force.
func (f *Fleet) deleteMembers(ctx context.Context, timeout time.Duration) {
	for _, m := range f.Members {
		if err := f.DeleteCluster(ctx, m.Spec.Name); err != nil {
			f.opts.progress("delete cluster %s: %v", m.Spec.Name, err)
		}
	}
	// One deadline for all: a member whose deletion hangs (no control plane
	// left) does not add its timeout to the others'.
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Second, timeout, true, func(ctx context.Context) (bool, error) {
		for _, m := range f.Members {
			err := f.Hub.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.Name}, &capiv1.Cluster{})
			if !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	for _, m := range f.Members {
		left, err := containers(ctx, map[string]string{"io.x-k8s.kind.cluster": m.Spec.Name})
		if err == nil && len(left) > 0 {
			f.opts.progress("removing containers CAPD left of %s: %v", m.Spec.Name, left)
			_ = removeContainers(ctx, left)
		}
	}
}
