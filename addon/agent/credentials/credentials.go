// Package credentials reads flotilla-agent's hub credentials — the kubeconfig
// that enrolment issues and a ClusterResourceSet delivers as a Secret, which
// the agent's Pod mounts — and tells when the file changes: the kubelet
// rewrites a mounted Secret when it is rotated, and the agent then reconnects
// to the hub with the new credentials without restarting.
package credentials

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"
)

// File is a kubeconfig file, polled for changes. Polling rather than
// inotify: the kubelet updates a Secret volume by swapping a symlink, which
// file watches on the path itself miss.
type File struct {
	Path string
	// Interval between two looks at the file.
	Interval time.Duration
	// Clock is the real clock when nil.
	Clock clock.Clock

	mu     sync.Mutex
	loaded [sha256.Size]byte
}

// Load reads the kubeconfig and remembers its content: WaitForChange waits
// for content different from what Load last returned.
func (f *File) Load() (*rest.Config, error) {
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return nil, fmt.Errorf("read hub kubeconfig: %w", err)
	}
	f.mu.Lock()
	f.loaded = sha256.Sum256(data)
	f.mu.Unlock()
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig %s: %w", f.Path, err)
	}
	return cfg, nil
}

// WaitForChange returns nil once the file's content differs from what Load
// last read, or ctx's error when it ends first. A file that cannot be read
// for a moment (a Secret volume being swapped) is not a change.
func (f *File) WaitForChange(ctx context.Context) error {
	c := f.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.After(f.Interval):
		}
		data, err := os.ReadFile(f.Path)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		f.mu.Lock()
		changed := !bytes.Equal(sum[:], f.loaded[:])
		f.mu.Unlock()
		if changed {
			return nil
		}
	}
}
