package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// capNames are Linux capability numbers as the Docker API names them.
var capNames = []string{
	"CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
	"SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
	"IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
	"SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
	"LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
	"WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
}

// MissingCaps names the capabilities up to lastCap (/proc/sys/kernel/cap_last_cap)
// that a CapBnd mask (the hex of /proc/<pid>/status) lacks.
func MissingCaps(capBnd string, lastCap int) ([]string, error) {
	mask, err := strconv.ParseUint(strings.TrimSpace(capBnd), 16, 64)
	if err != nil {
		return nil, fmt.Errorf("CapBnd %q: %w", capBnd, err)
	}
	var missing []string
	for i := 0; i <= lastCap && i < len(capNames); i++ {
		if mask&(1<<uint(i)) == 0 {
			missing = append(missing, capNames[i])
		}
	}
	return missing, nil
}

// Host is what a rewrite needs to know about the engine's machine.
type Host struct {
	// MissingCaps are the capabilities the engine cannot grant. None: nothing is rewritten.
	MissingCaps []string
	// Exists reports whether a path exists on the engine's machine.
	Exists func(path string) bool
}

// devices are passed to a rewritten container when the host has them: what a
// kind or CAPD node uses of the all-devices a privileged container would get.
var devices = []string{"/dev/kmsg", "/dev/fuse", "/dev/net/tun", "/dev/loop-control"}

// securityOpts replace whatever the request asked for of label, seccomp and apparmor.
var securityOpts = []string{"label=disable", "seccomp=unconfined", "apparmor=unconfined"}

var (
	createPath = regexp.MustCompile(`^(/v[0-9.]+)?/containers/create$`)
	execPath   = regexp.MustCompile(`^(/v[0-9.]+)?/containers/[^/]+/exec$`)
)

// Rewrite returns the body to forward for a request to path and what it changed
// (empty when nothing). Only POST /containers/create and /containers/{id}/exec
// asking for Privileged are rewritten, and only when the host misses capabilities.
func Rewrite(method, path string, body []byte, h Host) ([]byte, []string, error) {
	if method != "POST" || len(h.MissingCaps) == 0 {
		return body, nil, nil
	}
	switch {
	case createPath.MatchString(path):
		return rewriteCreate(body, h)
	case execPath.MatchString(path):
		return rewriteExec(body)
	}
	return body, nil, nil
}

// rewriteCreate turns HostConfig.Privileged into its parts minus the missing
// capabilities: every capability the engine has, no seccomp/AppArmor/SELinux
// confinement, no masked or read-only /proc and /sys paths, every device
// allowed by the device cgroup and the devices a node needs. A read-only bind
// whose host source does not exist is dropped rather than have the engine
// create it (kind and CAPD bind /lib/modules, which a kernel without modules
// lacks).
func rewriteCreate(body []byte, h Host) ([]byte, []string, error) {
	req, err := decode(body)
	if err != nil {
		return nil, nil, err
	}
	hc, _ := req["HostConfig"].(map[string]any)
	if hc == nil || hc["Privileged"] != true {
		return body, nil, nil
	}
	notes := []string{"privileged: all capabilities but " + strings.Join(h.MissingCaps, ",")}
	hc["Privileged"] = false
	hc["CapAdd"] = []any{"ALL"}
	hc["CapDrop"] = toAny(h.MissingCaps)
	hc["MaskedPaths"] = []any{}
	hc["ReadonlyPaths"] = []any{}

	var opts []any
	for _, o := range list(hc["SecurityOpt"]) {
		s, _ := o.(string)
		if k, _, _ := strings.Cut(s, "="); k == "label" || k == "seccomp" || k == "apparmor" {
			continue
		}
		opts = append(opts, o)
	}
	hc["SecurityOpt"] = append(opts, toAny(securityOpts)...)

	rules := list(hc["DeviceCgroupRules"])
	if !slices.Contains(rules, any("a *:* rwm")) {
		rules = append(rules, "a *:* rwm")
	}
	hc["DeviceCgroupRules"] = rules

	devs := list(hc["Devices"])
	for _, d := range devices {
		if h.Exists(d) && !hasDevice(devs, d) {
			devs = append(devs, map[string]any{"PathOnHost": d, "PathInContainer": d, "CgroupPermissions": "rwm"})
		}
	}
	hc["Devices"] = devs

	if binds, ok := hc["Binds"].([]any); ok {
		keep := []any{}
		for _, b := range binds {
			s, _ := b.(string)
			parts := strings.Split(s, ":")
			if len(parts) >= 2 && strings.HasPrefix(parts[0], "/") && readOnly(parts[2:]) && !h.Exists(parts[0]) {
				notes = append(notes, fmt.Sprintf("dropped bind %q: source missing", s))
				continue
			}
			keep = append(keep, b)
		}
		hc["Binds"] = keep
	}
	if mounts, ok := hc["Mounts"].([]any); ok {
		keep := []any{}
		for _, m := range mounts {
			mm, _ := m.(map[string]any)
			src, _ := mm["Source"].(string)
			if mm != nil && mm["Type"] == "bind" && mm["ReadOnly"] == true && src != "" && !h.Exists(src) {
				notes = append(notes, fmt.Sprintf("dropped bind mount %q: source missing", src))
				continue
			}
			keep = append(keep, m)
		}
		hc["Mounts"] = keep
	}
	out, err := json.Marshal(req)
	return out, notes, err
}

// rewriteExec runs a privileged exec unprivileged: it then has the container's
// own capabilities, which the create rewrite already widened.
func rewriteExec(body []byte) ([]byte, []string, error) {
	req, err := decode(body)
	if err != nil {
		return nil, nil, err
	}
	if req["Privileged"] != true {
		return body, nil, nil
	}
	req["Privileged"] = false
	out, err := json.Marshal(req)
	return out, []string{"exec: privileged dropped"}, err
}

// decode keeps numbers exact (memory limits do not survive float64).
func decode(body []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	var req map[string]any
	if err := d.Decode(&req); err != nil {
		return nil, fmt.Errorf("request body: %w", err)
	}
	return req, nil
}

func readOnly(opts []string) bool {
	for _, o := range opts {
		if slices.Contains(strings.Split(o, ","), "ro") {
			return true
		}
	}
	return false
}

func hasDevice(devs []any, path string) bool {
	for _, d := range devs {
		if m, _ := d.(map[string]any); m != nil && m["PathOnHost"] == path {
			return true
		}
	}
	return false
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
