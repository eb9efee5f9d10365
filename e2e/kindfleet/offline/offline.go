// Package offline describes offline.json: what `go run ./hack/kindimage
// -providers DIR` builds for a kind management cluster that reaches no
// registry, written by hack/kindimage and read by e2e/kindfleet.
package offline

import (
	"encoding/json"
	"fmt"
	"os"
)

// Assets is the content of offline.json.
type Assets struct {
	CAPIVersion string `json:"capiVersion"`
	// Repository is the clusterctl local repository of the four providers:
	// <label>/<version>/{<components>.yaml,metadata.yaml}.
	Repository string `json:"repository"`
	// Providers map clusterctl's provider names to their components' files.
	Providers []Provider `json:"providers"`
	// Images are OCI archives to load into the management cluster's nodes.
	Images []string `json:"images"`
	// CertManager is the manifest of the cert-manager stand-in.
	CertManager string `json:"certManager"`
	// LoadBalancerImageRepository and Tag go to a DockerCluster's
	// spec.loadBalancer; the image is in the Docker engine.
	LoadBalancerImageRepository string `json:"loadBalancerImageRepository"`
	LoadBalancerImageTag        string `json:"loadBalancerImageTag"`
	// NodeImage is the node image, in the Docker engine.
	NodeImage string `json:"nodeImage"`
}

// Provider is one entry of clusterctl's providers list.
type Provider struct {
	Name string `json:"name"`
	Type string `json:"type"`
	URL  string `json:"url"`
}

// Read reads an offline.json.
func Read(path string) (*Assets, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a := &Assets{}
	if err := json.Unmarshal(b, a); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

// Write writes an offline.json.
func Write(path string, a *Assets) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
