package fleet

import (
	"slices"
	"testing"
)

func TestMountedPathsNameTheWrittenSecretFiles(t *testing.T) {
	mounts := []secretMount{{mountPath: "/etc/flotilla/hub", dir: "/fleet/m1/addons/flotilla-system-flotilla-agent/hub"}}
	got := mountedPaths([]string{
		"--member=m1",
		"--hub-kubeconfig=/etc/flotilla/hub/kubeconfig",
		"--certs=/etc/flotilla/hub",
		"--other=/etc/flotilla/hubble/x", // not under the mount point
		"/etc/flotilla/hub/token",
	}, mounts)
	want := []string{
		"--member=m1",
		"--hub-kubeconfig=/fleet/m1/addons/flotilla-system-flotilla-agent/hub/kubeconfig",
		"--certs=/fleet/m1/addons/flotilla-system-flotilla-agent/hub",
		"--other=/etc/flotilla/hubble/x",
		"/fleet/m1/addons/flotilla-system-flotilla-agent/hub/token",
	}
	if !slices.Equal(got, want) {
		t.Errorf("mountedPaths =\n%q\nwant\n%q", got, want)
	}
}
