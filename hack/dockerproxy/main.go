// Command dockerproxy serves the Docker API on a unix socket and forwards it
// to the engine, rewriting privileged requests the engine cannot run.
//
// Docker 20.10 (Debian's docker.io 20.10.24) asks runc for every capability it
// knows when a container is --privileged, and runc fails ("unable to apply
// caps: operation not permitted") when the engine's bounding set lacks one —
// on the project's machines CAP_SYS_RESOURCE (moby#42906, fixed in moby#42933,
// not in 20.10). kind and CAPD always create their nodes privileged and exec
// into them privileged. Through this proxy such a create becomes "all
// capabilities the engine has, unconfined" (see Rewrite) and such an exec an
// ordinary one. When the engine misses no capability nothing is rewritten.
//
//	dockerproxy --listen /tmp/flotilla-docker.sock &
//	DOCKER_HOST=unix:///tmp/flotilla-docker.sock kind create cluster ...
//
// See docs/development.md, "kind without a registry".
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

func main() {
	listen := flag.String("listen", "/tmp/flotilla-docker.sock", "unix socket to serve the Docker API on")
	upstream := flag.String("upstream", "/var/run/docker.sock", "the engine's unix socket")
	missing := flag.String("missing-caps", "auto", `capabilities the engine cannot grant, comma separated ("auto": those missing from this process's bounding set; "": rewrite nothing)`)
	flag.Parse()
	log.SetPrefix("dockerproxy: ")
	log.SetFlags(log.LstdFlags)

	caps, err := missingCaps(*missing)
	if err != nil {
		log.Fatal(err)
	}
	host := Host{MissingCaps: caps, Exists: func(p string) bool { _, err := os.Stat(p); return err == nil }}
	if len(caps) == 0 {
		log.Printf("the engine misses no capability: forwarding without rewriting")
	} else {
		log.Printf("privileged requests get every capability but %s", strings.Join(caps, ","))
	}

	_ = os.Remove(*listen)
	l, err := net.Listen("unix", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.Chmod(*listen, 0o660); err != nil {
		log.Fatal(err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() { <-sig; _ = l.Close(); _ = os.Remove(*listen); os.Exit(0) }()

	rp := &httputil.ReverseProxy{
		Director: func(r *http.Request) { r.URL.Scheme = "http"; r.URL.Host = "docker" },
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", *upstream)
		}},
		FlushInterval: -1, // stream logs, events and attach output as they come
	}
	log.Printf("serving %s -> %s", *listen, *upstream)
	log.Fatal(http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Body != nil && (createPath.MatchString(r.URL.Path) || execPath.MatchString(r.URL.Path)) {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			out, notes, err := Rewrite(r.Method, r.URL.Path, body, host)
			if err != nil {
				log.Printf("%s %s: forwarding unchanged: %v", r.Method, r.URL.Path, err)
				out = body
			}
			for _, n := range notes {
				log.Printf("%s?%s: %s", r.URL.Path, r.URL.RawQuery, n)
			}
			r.Body = io.NopCloser(bytes.NewReader(out))
			r.ContentLength = int64(len(out))
			r.Header.Set("Content-Length", strconv.Itoa(len(out)))
		}
		rp.ServeHTTP(w, r)
	})))
}

func missingCaps(flagValue string) ([]string, error) {
	if flagValue != "auto" {
		var caps []string
		for _, c := range strings.Split(flagValue, ",") {
			if c = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(c)), "CAP_"); c != "" {
				caps = append(caps, c)
			}
		}
		return caps, nil
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return nil, err
	}
	lastCap, err := strconv.Atoi(strings.TrimSpace(string(last)))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			return MissingCaps(v, lastCap)
		}
	}
	return nil, fmt.Errorf("no CapBnd in /proc/self/status")
}
