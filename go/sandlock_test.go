package sandlock

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var system = []string{"/usr", "/lib", "/lib64", "/bin", "/etc"}

func mustRun(t *testing.T, s *Sandbox, argv ...string) *Result {
	t.Helper()
	r, err := s.Run(argv...)
	if err != nil {
		t.Fatalf("Run %v: %v", argv, err)
	}
	return r
}

func TestRunCapturesOutputAndStatus(t *testing.T) {
	s := &Sandbox{FsReadable: system, Env: map[string]string{"GREETING": "hi"}}
	r := mustRun(t, s, "/bin/sh", "-c", `echo "$GREETING"; echo err >&2; exit 3`)
	if string(r.Stdout) != "hi\n" || string(r.Stderr) != "err\n" || r.ExitCode != 3 ||
		r.Success || r.Reason != Exited || r.Signal != -1 {
		t.Fatalf("got %+v", r)
	}
}

func TestFilesOutsideTheGrantsAreDenied(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "s3cret" { // readable outside
		t.Fatal("probe does not work outside")
	}
	r := mustRun(t, &Sandbox{FsReadable: system}, "/bin/cat", secret)
	if r.ExitCode == 0 || strings.Contains(string(r.Stdout), "s3cret") {
		t.Fatalf("read a file outside the grants: %+v", r)
	}
	out := filepath.Join(dir, "out")
	r = mustRun(t, &Sandbox{FsReadable: system, FsWritable: []string{dir}},
		"/bin/sh", "-c", "echo written > "+out)
	if b, _ := os.ReadFile(out); r.ExitCode != 0 || string(b) != "written\n" {
		t.Fatalf("write under FsWritable failed: %+v", r)
	}
}

func TestNetworkOnlyWhereAllowed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	probe := "import socket; socket.create_connection(('127.0.0.1', " + port + ")); print('ok')"
	denied := mustRun(t, &Sandbox{FsReadable: system}, "/usr/bin/python3", "-c", probe)
	if denied.ExitCode == 0 || !strings.Contains(string(denied.Stderr), "PermissionError") {
		t.Fatalf("connect without a rule: %+v", denied)
	}
	allowed := mustRun(t, &Sandbox{FsReadable: system, NetAllow: []string{"127.0.0.1:" + port}},
		"/usr/bin/python3", "-c", probe)
	if string(allowed.Stdout) != "ok\n" {
		t.Fatalf("connect with a rule: %+v %s", allowed, allowed.Stderr)
	}
}

func TestHandlersDecideInGo(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	s := &Sandbox{FsReadable: system}
	r, err := s.RunWithHandlers([]string{"/bin/sh", "-c", "uname -n; cat /etc/hostname >/dev/null"},
		map[string]Handler{
			"uname": func(c *Call) Action { return Deny(syscall.EPERM) },
			"openat": func(c *Call) Action {
				if p, ok := c.ReadString(c.Args[1], 4096); ok {
					mu.Lock()
					seen = append(seen, p)
					mu.Unlock()
				}
				return Continue()
			},
		})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Stdout) != 0 || !strings.Contains(string(r.Stderr), "not permitted") {
		t.Fatalf("uname was not denied: %+v %s", r, r.Stderr)
	}
	found := false
	for _, p := range seen {
		found = found || p == "/etc/hostname"
	}
	if !found {
		t.Fatal("the openat handler never saw /etc/hostname")
	}
}

func TestTimeoutAndErrors(t *testing.T) {
	r := mustRun(t, &Sandbox{FsReadable: system, Timeout: 300 * time.Millisecond}, "/bin/sleep", "30")
	if r.Reason != Timeout || r.Success {
		t.Fatalf("timeout: %+v", r)
	}
	if err := (&Sandbox{FsReadable: []string{"/no/such/dir"}}).Check(); err == nil ||
		!strings.Contains(err.Error(), "/no/such/dir") {
		t.Fatalf("missing path: %v", err)
	}
	if err := (&Sandbox{MaxMemory: "lots"}).Check(); err == nil {
		t.Fatal("bad MaxMemory accepted")
	}
}
