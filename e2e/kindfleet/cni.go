package kindfleet

import (
	"bytes"
	"context"
	"fmt"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonsv1 "sigs.k8s.io/cluster-api/api/addons/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// podSubnet is the template's default POD_CIDR.
const podSubnet = "192.168.0.0/16"

// installCNI gives every workload cluster of the namespace that opts into
// Flotilla a CNI, without which its nodes never turn Ready: kindnet, the CNI
// kind itself installs, read from the management cluster's node image and
// applied by a ClusterResourceSet.
func (f *Fleet) installCNI(ctx context.Context) error {
	nodes, err := f.provider().ListInternalNodes(f.opts.ClusterName)
	if err != nil || len(nodes) == 0 {
		return fmt.Errorf("nodes of %s: %v", f.opts.ClusterName, err)
	}
	var raw bytes.Buffer
	if err := nodes[0].Command("cat", "/kind/manifests/default-cni.yaml").SetStdout(&raw).Run(); err != nil {
		return fmt.Errorf("read kindnet's manifest from the node image: %w", err)
	}
	// kind's node image templates the manifest with the pod subnet.
	tmpl, err := template.New("kindnet").Option("missingkey=error").Parse(raw.String())
	if err != nil {
		return err
	}
	var manifest bytes.Buffer
	if err := tmpl.Execute(&manifest, struct{ PodSubnet string }{podSubnet}); err != nil {
		return fmt.Errorf("render kindnet's manifest: %w", err)
	}
	if err := f.ensureNamespace(ctx, f.opts.Namespace); err != nil {
		return err
	}
	f.opts.progress("installing the node image's default CNI (kindnet, or kind-routes in the offline image) in the workload clusters with a ClusterResourceSet")
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.opts.Namespace, Name: "kindnet"},
		Data:       map[string]string{"kindnet.yaml": manifest.String()},
	}
	crs := &addonsv1.ClusterResourceSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.opts.Namespace, Name: "kindnet"},
		Spec: addonsv1.ClusterResourceSetSpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{clusterv1alpha1.EnrolLabel: "true"}},
			Resources:       []addonsv1.ResourceRef{{Kind: "ConfigMap", Name: cm.Name}},
			Strategy:        string(addonsv1.ClusterResourceSetStrategyApplyOnce),
		},
	}
	if err := f.Hub.Create(ctx, cm); err != nil {
		return err
	}
	return f.Hub.Create(ctx, crs)
}
