package kindfleet

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

func (f *Fleet) provider() *cluster.Provider {
	return cluster.NewProvider(cluster.ProviderWithDocker())
}

// createManagementCluster creates the kind cluster. Its node mounts the
// Docker socket: CAPD, running in it, creates the workload clusters'
// containers next to it.
func (f *Fleet) createManagementCluster() error {
	f.opts.progress("creating the kind management cluster %s (%s)", f.opts.ClusterName, f.opts.NodeImage)
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes: []v1alpha4.Node{{
			Role:        v1alpha4.ControlPlaneRole,
			Image:       f.opts.NodeImage,
			ExtraMounts: []v1alpha4.Mount{{HostPath: dockerSocket(), ContainerPath: "/var/run/docker.sock"}},
		}},
	}
	if f.offline != nil {
		// The offline node image runs kube-proxy in nftables mode: the
		// machines' kernels may have no IPVS and no modules to load.
		cfg.Networking.KubeProxyMode = v1alpha4.NFTablesProxyMode
	}
	return f.provider().Create(f.opts.ClusterName,
		cluster.CreateWithV1Alpha4Config(cfg),
		cluster.CreateWithKubeconfigPath(f.HubKubeconfig),
		cluster.CreateWithWaitForReady(3*time.Minute),
		cluster.CreateWithDisplayUsage(false),
		cluster.CreateWithDisplaySalutation(false),
	)
}

// loadImages imports the image archives `make images` writes into every
// node's containerd, as `kind load image-archive` does: the manager's
// Deployment then starts without a registry.
func (f *Fleet) loadImages() error {
	nodes, err := f.provider().ListInternalNodes(f.opts.ClusterName)
	if err != nil {
		return err
	}
	for _, image := range f.opts.Images {
		f.opts.progress("loading %s", image)
		for _, n := range nodes {
			if err := loadArchive(n, image); err != nil {
				return fmt.Errorf("load %s into %s: %w", image, n, err)
			}
		}
	}
	return nil
}

func loadArchive(n nodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}

func (f *Fleet) deleteManagementCluster() {
	f.opts.progress("deleting the kind management cluster %s", f.opts.ClusterName)
	if err := f.provider().Delete(f.opts.ClusterName, f.HubKubeconfig); err != nil {
		f.opts.progress("delete the kind cluster: %v", err)
	}
}
