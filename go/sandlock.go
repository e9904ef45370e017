// Package sandlock runs commands confined by Landlock and seccomp, without
// root, through libsandlock's C ABI (cgo).
//
// A Sandbox is a plain configuration struct; Run builds the native
// sandbox, runs the command and returns its Result.  Handlers decide
// trapped syscalls in Go.  The package links the in-tree static library
// (../build/libsandlock.a, made by `make`); see go/README.md.
package sandlock

/*
#cgo CFLAGS: -I${SRCDIR}/../include
#cgo LDFLAGS: ${SRCDIR}/../build/libsandlock.a -lseccomp -lpthread -lhttp_parser -lssl -lcrypto -ljansson
#include <stdlib.h>
#include "sandlock.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"
)

// ExitReason tells how a run ended (the C ABI's sandlock_exit_reason).
type ExitReason int

const (
	Exited   ExitReason = C.SANDLOCK_EXIT_EXITED
	Signaled ExitReason = C.SANDLOCK_EXIT_SIGNALED
	Timeout  ExitReason = C.SANDLOCK_EXIT_TIMEOUT
	Killed   ExitReason = C.SANDLOCK_EXIT_KILLED
)

func (r ExitReason) String() string {
	switch r {
	case Exited:
		return "exited"
	case Signaled:
		return "signaled"
	case Timeout:
		return "timeout"
	case Killed:
		return "killed"
	}
	return fmt.Sprintf("ExitReason(%d)", int(r))
}

// Sandbox is the configuration of a sandbox; the zero value denies every
// file and all network (nothing is readable: grant what the command needs).
// Field names follow the reference SDKs (Python's fs_readable is
// FsReadable).
type Sandbox struct {
	FsReadable   []string          // read and execute beneath these paths
	FsWritable   []string          // read and write beneath these paths
	FsDenied     []string          // denied even inside a granted tree
	NetAllow     []string          // destinations: "host:port", "udp://...", ":port"
	NetAllowBind []string          // TCP ports the command may bind: "8080", "9000-9010", "*"
	Env          map[string]string // set in the command's environment
	CleanEnv     bool              // start from a minimal environment
	Cwd          string            // the command's working directory
	MaxMemory    string            // "512M", "1.5G" (empty: no limit)
	MaxProcesses int               // processes at once (0: the default, 64; -1: no limit)
	Timeout      time.Duration     // kill the sandbox after this (0: none)
	GPUDevices   []uint32          // GPUs to grant (nil: none; see AllGPUs)
	AllGPUs      bool              // grant every GPU
}

// Result is the outcome of one run.
type Result struct {
	ExitCode int
	Reason   ExitReason
	Signal   int // the signal that ended the command, -1 if none did
	Success  bool
	Stdout   []byte
	Stderr   []byte
}

// Error is a failure of the library (bad configuration, launch failure),
// not of the command.
type Error struct {
	Code int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("sandlock: %s (code %d)", e.Msg, e.Code) }

func takeError(code C.int, msg *C.char) error {
	text := "failed"
	if msg != nil {
		text = C.GoString(msg)
		C.sandlock_string_free(msg)
	}
	return &Error{Code: int(code), Msg: text}
}

// cstrings holds C copies of Go strings until free.
type cstrings []*C.char

func (c *cstrings) add(s string) *C.char {
	p := C.CString(s)
	*c = append(*c, p)
	return p
}

func (c cstrings) free() {
	for _, p := range c {
		C.free(unsafe.Pointer(p))
	}
}

func (s *Sandbox) builder(cs *cstrings) (*C.sandlock_builder_t, error) {
	b := C.sandlock_sandbox_builder_new()
	if b == nil {
		return nil, errors.New("sandlock: out of memory")
	}
	for _, p := range s.FsReadable {
		b = C.sandlock_sandbox_builder_fs_read(b, cs.add(p))
	}
	for _, p := range s.FsWritable {
		b = C.sandlock_sandbox_builder_fs_write(b, cs.add(p))
	}
	for _, p := range s.FsDenied {
		b = C.sandlock_sandbox_builder_fs_deny(b, cs.add(p))
	}
	for _, r := range s.NetAllow {
		b = C.sandlock_sandbox_builder_net_allow(b, cs.add(r))
	}
	for _, r := range s.NetAllowBind {
		b = C.sandlock_sandbox_builder_net_allow_bind(b, cs.add(r))
	}
	for k, v := range s.Env {
		b = C.sandlock_sandbox_builder_env_var(b, cs.add(k), cs.add(v))
	}
	if s.CleanEnv {
		b = C.sandlock_sandbox_builder_clean_env(b, true)
	}
	if s.Cwd != "" {
		b = C.sandlock_sandbox_builder_cwd(b, cs.add(s.Cwd))
	}
	return s.limits(b, cs)
}

func (s *Sandbox) limits(b *C.sandlock_builder_t, cs *cstrings) (*C.sandlock_builder_t, error) {
	if s.MaxMemory != "" {
		var bytes C.uint64_t
		if C.sandlock_parse_memory_size(cs.add(s.MaxMemory), &bytes) != 0 {
			C.sandlock_sandbox_builder_free(b)
			return nil, &Error{Code: int(C.SANDLOCK_ERR_INVALID),
				Msg: fmt.Sprintf("MaxMemory %q: expected a size such as 512M or 1.5G", s.MaxMemory)}
		}
		b = C.sandlock_sandbox_builder_max_memory(b, bytes)
	}
	switch {
	case s.MaxProcesses < 0:
		b = C.sandlock_sandbox_builder_max_processes(b, 0)
	case s.MaxProcesses > 0:
		b = C.sandlock_sandbox_builder_max_processes(b, C.uint32_t(s.MaxProcesses))
	}
	if s.Timeout > 0 {
		ms := s.Timeout.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		b = C.sandlock_sandbox_builder_timeout_ms(b, C.uint64_t(ms))
	}
	if s.AllGPUs {
		b = C.sandlock_sandbox_builder_gpu_devices(b, nil, 0)
	} else if len(s.GPUDevices) > 0 {
		ids := (*C.uint32_t)(C.malloc(C.size_t(4 * len(s.GPUDevices))))
		defer C.free(unsafe.Pointer(ids))
		arr := unsafe.Slice(ids, len(s.GPUDevices))
		for i, g := range s.GPUDevices {
			arr[i] = C.uint32_t(g)
		}
		b = C.sandlock_sandbox_builder_gpu_devices(b, ids, C.uint32_t(len(s.GPUDevices)))
	}
	return b, nil
}

// build makes the native sandbox (free with C.sandlock_sandbox_free).
func (s *Sandbox) build() (*C.sandlock_sandbox_t, error) {
	var cs cstrings
	defer cs.free()
	b, err := s.builder(&cs)
	if err != nil {
		return nil, err
	}
	var code C.int
	var msg *C.char
	sb := C.sandlock_sandbox_build(b, &code, &msg)
	if sb == nil {
		return nil, takeError(code, msg)
	}
	return sb, nil
}

// Check builds the configuration without running anything: the error a
// Run would report for it, or nil.
func (s *Sandbox) Check() error {
	sb, err := s.build()
	if sb != nil {
		C.sandlock_sandbox_free(sb)
	}
	return err
}

// Run runs argv (argv[0] is looked up on the sandbox's PATH when it has no
// '/') in the sandbox and waits for it.  The error is the library's; the
// command's own failure is in the Result.
func (s *Sandbox) Run(argv ...string) (*Result, error) {
	return s.RunWithHandlers(argv, nil)
}

func cArgv(argv []string, cs *cstrings) **C.char {
	arr := (**C.char)(C.malloc(C.size_t(len(argv)+1) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	v := unsafe.Slice(arr, len(argv)+1)
	for i, a := range argv {
		v[i] = cs.add(a)
	}
	v[len(argv)] = nil
	return arr
}

func takeResult(r *C.sandlock_result_t) *Result {
	defer C.sandlock_result_free(r)
	var n C.uintptr_t
	out := C.sandlock_result_stdout_bytes(r, &n)
	stdout := C.GoBytes(unsafe.Pointer(out), C.int(n))
	errb := C.sandlock_result_stderr_bytes(r, &n)
	stderr := C.GoBytes(unsafe.Pointer(errb), C.int(n))
	return &Result{
		ExitCode: int(C.sandlock_result_exit_code(r)),
		Reason:   ExitReason(C.sandlock_result_reason(r)),
		Signal:   int(C.sandlock_result_signal(r)),
		Success:  bool(C.sandlock_result_success(r)),
		Stdout:   stdout,
		Stderr:   stderr,
	}
}
