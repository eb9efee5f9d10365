//go:build tools

// Package crictl pins crictl for the offline kind node image (hack/kindimage).
package crictl

import (
	_ "sigs.k8s.io/cri-tools/cmd/crictl"
)
