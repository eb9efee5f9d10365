// Command pause is the sandbox process of the offline kind node image
// (hack/kindimage), doing what Kubernetes' pause.c does: sleep as PID 1 of a
// pod, reap zombies, exit on SIGINT or SIGTERM. Built static from the root
// module, so the image needs no C toolchain.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Version is the pause version kubeadm asks for, stamped by hack/kindimage.
var Version = "dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause.go", Version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	c := make(chan os.Signal, 16)
	signal.Notify(c, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range c {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", s)
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			if pid, _ := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 {
				break
			}
		}
	}
}
