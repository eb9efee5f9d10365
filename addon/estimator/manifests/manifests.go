// Package manifests renders the manifests of flotilla-estimator that a
// ClusterResourceSet installs in every member.
package manifests

import (
	"bytes"
	_ "embed"
	"fmt"
	"text/template"
	"time"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

//go:embed estimator.yaml.tmpl
var estimatorYAML string

var estimatorTemplate = template.Must(template.New("estimator").Option("missingkey=error").Parse(estimatorYAML))

// Params are the settings the manager renders the manifests with.
type Params struct {
	// Image of flotilla-estimator, e.g. ghcr.io/flotilla-io/flotilla-estimator:v0.1.0.
	Image string
	// Version labels the Deployment (app.kubernetes.io/version).
	Version string
	// PublishInterval is the estimator's debounce: it publishes at most this often.
	PublishInterval time.Duration
}

// Render returns the estimator's manifests as one multi-document YAML.
func Render(p Params) ([]byte, error) {
	if p.Image == "" {
		return nil, fmt.Errorf("render estimator manifests: no image")
	}
	if p.PublishInterval <= 0 {
		p.PublishInterval = 10 * time.Second
	}
	var b bytes.Buffer
	err := estimatorTemplate.Execute(&b, struct {
		Params
		Namespace, ConfigMap string
	}{p, clusterv1alpha1.SystemNamespace, clusterv1alpha1.CapacityModelConfigMap})
	if err != nil {
		return nil, fmt.Errorf("render estimator manifests: %w", err)
	}
	return b.Bytes(), nil
}
