//go:build tools

// Package gen pins the code generators: controller-gen for CRDs, RBAC and deepcopy.
package gen

import _ "sigs.k8s.io/controller-tools/cmd/controller-gen"
