package kindfleet

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// UnavailableError says why this machine cannot run a kind fleet.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// Available checks for a Docker engine: `docker info` must answer. kind and
// CAPD run every cluster node as a container of that engine.
func Available(ctx context.Context) error {
	if _, err := exec.LookPath("docker"); err != nil {
		return &UnavailableError{Reason: "the docker command is not installed"}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput()
	if err != nil {
		return &UnavailableError{Reason: fmt.Sprintf("`docker info` fails, no Docker engine answers: %s", strings.TrimSpace(firstLine(out, err)))}
	}
	return nil
}

// EnsureImage makes sure the Docker engine has image: already there, or
// pulled within a few minutes. A machine without a registry gets an
// UnavailableError naming the image, so the suite skips instead of failing
// half-way through creating clusters.
func EnsureImage(ctx context.Context, image string) error {
	if exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Id}}", image).Run() == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "pull", image).CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return &UnavailableError{Reason: fmt.Sprintf("image %s is not on this machine and cannot be pulled (%s)", image, strings.TrimSpace(lastLine(out, err)))}
	}
	return nil
}

func lastLine(out []byte, err error) string {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if last := lines[len(lines)-1]; len(last) > 0 {
		return string(last)
	}
	return err.Error()
}

func firstLine(out []byte, err error) string {
	if line, _, _ := bytes.Cut(bytes.TrimSpace(out), []byte("\n")); len(line) > 0 {
		return string(line)
	}
	return err.Error()
}

// containers lists the names of the containers with all the labels given.
// kind and CAPD label each node container io.x-k8s.kind.cluster=<cluster>
// and io.x-k8s.kind.role=<role>.
func containers(ctx context.Context, labels map[string]string) ([]string, error) {
	args := []string{"ps", "--all", "--format", "{{.Names}}"}
	for k, v := range labels {
		args = append(args, "--filter", "label="+k+"="+v)
	}
	out, err := exec.CommandContext(ctx, "docker", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("docker %s: %w", strings.Join(args, " "), err)
	}
	return strings.Fields(string(out)), nil
}

// removeContainers force-removes containers: a machine lost for good.
func removeContainers(ctx context.Context, names []string) error {
	if len(names) == 0 {
		return nil
	}
	out, err := exec.CommandContext(ctx, "docker", append([]string{"rm", "--force"}, names...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker rm %s: %s", strings.Join(names, " "), firstLine(out, err))
	}
	return nil
}
