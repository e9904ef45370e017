// Example: run a shell command confined to the system directories and a
// scratch directory, with a Go handler refusing uname.
package main

import (
	"fmt"
	"log"
	"os"
	"syscall"

	sandlock "sandlock.dev/sandlock/go"
)

func main() {
	dir, err := os.MkdirTemp("", "sandlock-go-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sb := &sandlock.Sandbox{
		FsReadable: []string{"/usr", "/lib", "/lib64", "/bin", "/etc"},
		FsWritable: []string{dir},
		MaxMemory:  "256M",
	}
	r, err := sb.RunWithHandlers(
		[]string{"/bin/sh", "-c", "echo hello > " + dir + "/f; cat " + dir + "/f; uname || echo uname refused"},
		map[string]sandlock.Handler{
			"uname": func(c *sandlock.Call) sandlock.Action { return sandlock.Deny(syscall.EPERM) },
		})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("exit %d (%s)\n%s", r.ExitCode, r.Reason, r.Stdout)
}
