// Package manifests renders what a ClusterResourceSet installs in a
// Pull-mode member: flotilla-agent, and separately the Secret holding the
// agent's hub credentials (delivered from a Secret of type
// addons.cluster.x-k8s.io/resource-set so that the credentials never sit in
// a ConfigMap).
package manifests

import (
	"bytes"
	_ "embed"
	"encoding/base64"
	"fmt"
	"text/template"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

const (
	// ServiceAccount is the agent's ServiceAccount in the member's
	// flotilla-system, the identity it applies Works with there.
	ServiceAccount = "flotilla-agent"
	// HubSecret is the Secret in the member's flotilla-system holding the
	// agent's hub kubeconfig.
	HubSecret = "flotilla-agent-hub"
	// KubeconfigKey is the key of the kubeconfig in HubSecret.
	KubeconfigKey = "kubeconfig"
	// HubMountPath is where the agent's container mounts HubSecret; the agent
	// reads --hub-kubeconfig=HubMountPath/KubeconfigKey and follows the file
	// when the kubelet rewrites it (Secret rotated).
	HubMountPath = "/etc/flotilla/hub"
)

var (
	//go:embed agent.yaml.tmpl
	agentYAML string
	//go:embed hub-credentials.yaml.tmpl
	hubCredentialsYAML string

	agentTemplate          = template.Must(template.New("agent").Option("missingkey=error").Parse(agentYAML))
	hubCredentialsTemplate = template.Must(template.New("hub-credentials").Option("missingkey=error").Parse(hubCredentialsYAML))
)

// Params are the settings the manager renders the agent with.
type Params struct {
	// Member is the MemberCluster's name.
	Member string
	// Image of flotilla-agent.
	Image string
	// Version labels the Deployment (app.kubernetes.io/version).
	Version string
}

type values struct {
	Params
	Namespace, ServiceAccount, HubSecret, KubeconfigKey, HubMountPath, Kubeconfig string
}

// Render returns the agent's manifests as one multi-document YAML.
func Render(p Params) ([]byte, error) {
	if p.Image == "" || p.Member == "" {
		return nil, fmt.Errorf("render agent manifests: image and member are required")
	}
	return execute(agentTemplate, values{Params: p, Namespace: clusterv1alpha1.SystemNamespace, ServiceAccount: ServiceAccount, HubSecret: HubSecret, KubeconfigKey: KubeconfigKey, HubMountPath: HubMountPath})
}

// RenderHubCredentials returns the manifest of the Secret holding the agent's
// hub kubeconfig.
func RenderHubCredentials(member string, kubeconfig []byte) ([]byte, error) {
	return execute(hubCredentialsTemplate, values{
		Params: Params{Member: member}, Namespace: clusterv1alpha1.SystemNamespace, HubSecret: HubSecret,
		KubeconfigKey: KubeconfigKey, Kubeconfig: base64.StdEncoding.EncodeToString(kubeconfig),
	})
}

func execute(t *template.Template, v values) ([]byte, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("render %s manifests for member %s: %w", t.Name(), v.Member, err)
	}
	return b.Bytes(), nil
}
