package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMissingCaps(t *testing.T) {
	for _, tc := range []struct {
		name, capBnd string
		lastCap      int
		want         []string
	}{
		{"this machine: no SYS_RESOURCE", "000001fffeffffff", 40, []string{"SYS_RESOURCE"}},
		{"full set", "000001ffffffffff", 40, nil},
		{"older kernel, last cap 37", "0000003fffffffff", 37, nil},
		{"two missing", "000001fffefffffe", 40, []string{"CHOWN", "SYS_RESOURCE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MissingCaps(tc.capBnd, tc.lastCap)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("MissingCaps (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := MissingCaps("zz", 40); err == nil {
		t.Error("MissingCaps accepted a mask that is not hex")
	}
}

func TestRewrite(t *testing.T) {
	onHost := map[string]bool{"/dev/kmsg": true, "/dev/fuse": true, "/var/run/docker.sock": true}
	host := Host{MissingCaps: []string{"SYS_RESOURCE"}, Exists: func(p string) bool { return onHost[p] }}
	kmsg := map[string]any{"PathOnHost": "/dev/kmsg", "PathInContainer": "/dev/kmsg", "CgroupPermissions": "rwm"}
	fuse := map[string]any{"PathOnHost": "/dev/fuse", "PathInContainer": "/dev/fuse", "CgroupPermissions": "rwm"}
	unconfined := []any{"label=disable", "seccomp=unconfined", "apparmor=unconfined"}

	for _, tc := range []struct {
		name         string
		host         Host
		method, path string
		body         string
		// want is the rewritten body as JSON; "" means forwarded byte for byte.
		want      string
		wantNotes []string
	}{
		{
			name: "kind node create: privileged split into its parts, /lib/modules bind dropped",
			host: host, method: "POST", path: "/v1.41/containers/create",
			body: `{"Image":"flotilla-kind/node:v1.36.3","HostConfig":{"Privileged":true,"Binds":["/lib/modules:/lib/modules:ro","/var/run/docker.sock:/var/run/docker.sock"],"SecurityOpt":["seccomp=unconfined","apparmor=unconfined"],"Memory":9223372036854775807}}`,
			want: mustJSON(map[string]any{"Image": "flotilla-kind/node:v1.36.3", "HostConfig": map[string]any{
				"Privileged": false, "CapAdd": []any{"ALL"}, "CapDrop": []any{"SYS_RESOURCE"},
				"MaskedPaths": []any{}, "ReadonlyPaths": []any{}, "SecurityOpt": unconfined,
				"DeviceCgroupRules": []any{"a *:* rwm"}, "Devices": []any{kmsg, fuse},
				"Binds":  []any{"/var/run/docker.sock:/var/run/docker.sock"},
				"Memory": json.Number("9223372036854775807"),
			}}),
			wantNotes: []string{"privileged: all capabilities but SYS_RESOURCE", `dropped bind "/lib/modules:/lib/modules:ro": source missing`},
		},
		{
			name: "CAPD-style create: Mounts, a read-write bind whose source is missing is kept, own opts replaced",
			host: host, method: "POST", path: "/containers/create",
			body: `{"HostConfig":{"Privileged":true,"SecurityOpt":["seccomp=/x.json","no-new-privileges"],"Devices":[{"PathOnHost":"/dev/kmsg","PathInContainer":"/dev/kmsg","CgroupPermissions":"r"}],"DeviceCgroupRules":["a *:* rwm"],"Binds":["/data:/data"],"Mounts":[{"Type":"bind","Source":"/lib/modules","Target":"/lib/modules","ReadOnly":true},{"Type":"volume","Target":"/var"}]}}`,
			want: mustJSON(map[string]any{"HostConfig": map[string]any{
				"Privileged": false, "CapAdd": []any{"ALL"}, "CapDrop": []any{"SYS_RESOURCE"},
				"MaskedPaths": []any{}, "ReadonlyPaths": []any{},
				"SecurityOpt":       append([]any{"no-new-privileges"}, unconfined...),
				"DeviceCgroupRules": []any{"a *:* rwm"},
				"Devices":           []any{map[string]any{"PathOnHost": "/dev/kmsg", "PathInContainer": "/dev/kmsg", "CgroupPermissions": "r"}, fuse},
				"Binds":             []any{"/data:/data"},
				"Mounts":            []any{map[string]any{"Type": "volume", "Target": "/var"}},
			}}),
			wantNotes: []string{"privileged: all capabilities but SYS_RESOURCE", `dropped bind mount "/lib/modules": source missing`},
		},
		{
			name: "unprivileged create forwarded unchanged",
			host: host, method: "POST", path: "/v1.41/containers/create",
			body: `{"Image":"x","HostConfig":{"Binds":["/lib/modules:/lib/modules:ro"]}}`,
		},
		{
			name: "engine misses nothing: privileged create forwarded unchanged",
			host: Host{Exists: host.Exists}, method: "POST", path: "/v1.41/containers/create",
			body: `{"HostConfig":{"Privileged":true}}`,
		},
		{
			name: "privileged exec runs with the container's capabilities",
			host: host, method: "POST", path: "/v1.41/containers/kind-control-plane/exec",
			body:      `{"Cmd":["cat","/kind/version"],"Privileged":true,"AttachStdout":true}`,
			want:      `{"AttachStdout":true,"Cmd":["cat","/kind/version"],"Privileged":false}`,
			wantNotes: []string{"exec: privileged dropped"},
		},
		{
			name: "ordinary exec forwarded unchanged",
			host: host, method: "POST", path: "/containers/abc/exec",
			body: `{"Cmd":["true"]}`,
		},
		{
			name: "other endpoints are not read",
			host: host, method: "POST", path: "/v1.41/containers/abc/start",
			body: `{"Privileged":true}`,
		},
		{
			name: "exec start is not an exec create",
			host: host, method: "POST", path: "/v1.41/exec/abc/start",
			body: `{"Privileged":true}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, notes, err := Rewrite(tc.method, tc.path, []byte(tc.body), tc.host)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == "" {
				want = tc.body
				if string(got) != want {
					t.Errorf("body changed:\n got %s\nwant %s", got, want)
				}
			} else if diff := cmp.Diff(decodeT(t, want), decodeT(t, string(got))); diff != "" {
				t.Errorf("rewritten body (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotes, notes); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRewriteRefusesABodyThatIsNotJSON(t *testing.T) {
	_, _, err := Rewrite("POST", "/containers/create", []byte("{"), Host{MissingCaps: []string{"SYS_RESOURCE"}})
	if err == nil || !strings.Contains(err.Error(), "request body") {
		t.Fatalf("err = %v, want a request body error", err)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func decodeT(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
