//go:build tools

// Package containerd pins the container runtime of the offline kind node image
// (hack/kindimage): containerd, ctr and the runc v2 shim.
package containerd

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
