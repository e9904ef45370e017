package sandlock

/*
#include <stdint.h>
#include <stdlib.h>
#include "sandlock.h"
int32_t sandlock_go_trampoline(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                               sandlock_action_t *out);
void sandlock_go_release(void *ud);
*/
import "C"

import (
	"runtime/cgo"
	"syscall"
	"unsafe"
)

// Call is one trapped syscall, as a Handler sees it.  It is valid only
// during the handler's call.
type Call struct {
	Nr   int       // the syscall number (native architecture)
	Pid  int       // the calling thread
	Args [6]uint64 // the raw arguments
	mem  *C.sandlock_mem_t
}

// ReadString reads a NUL-terminated string of at most max bytes from the
// caller's memory (a path argument, say); ok is false when unreadable.
func (c *Call) ReadString(addr uint64, max int) (s string, ok bool) {
	p := C.sandlock_mem_read_string(c.mem, C.uint64_t(addr), C.size_t(max))
	if p == nil {
		return "", false
	}
	defer C.sandlock_string_free(p)
	return C.GoString(p), true
}

// Action is a handler's decision.
type Action struct {
	kind  int
	errno int32
	value int64
}

const (
	actContinue = iota
	actErrno
	actReturn
	actKill
)

// Continue lets the call proceed in the kernel (and the next handler or
// builtin still sees it).
func Continue() Action { return Action{kind: actContinue} }

// Deny fails the call with errno e.
func Deny(e syscall.Errno) Action { return Action{kind: actErrno, errno: int32(e)} }

// Return answers the call with v, without performing it.
func Return(v int64) Action { return Action{kind: actReturn, value: v} }

// Kill kills the whole sandbox.
func Kill() Action { return Action{kind: actKill} }

// Handler decides a trapped syscall.
type Handler func(c *Call) Action

//export goSandlockHandle
func goSandlockHandle(ud unsafe.Pointer, n *C.sandlock_notif_t, m *C.sandlock_mem_t,
	out *C.sandlock_action_t) C.int32_t {
	h := cgo.Handle(*(*C.uintptr_t)(ud)).Value().(Handler)
	c := &Call{Nr: int(n.syscall_nr), Pid: int(n.pid), mem: m}
	for i := range c.Args {
		c.Args[i] = uint64(n.args[i])
	}
	a := h(c)
	switch a.kind {
	case actErrno:
		C.sandlock_action_set_errno(out, C.int32_t(a.errno))
	case actReturn:
		C.sandlock_action_set_return_value(out, C.int64_t(a.value))
	case actKill:
		C.sandlock_action_set_kill(out, C.int32_t(syscall.SIGKILL), 0)
	default:
		C.sandlock_action_set_continue(out)
	}
	return 0
}

//export goSandlockRelease
func goSandlockRelease(ud unsafe.Pointer) {
	cgo.Handle(*(*C.uintptr_t)(ud)).Delete()
}

// newHandler wraps h for the C ABI; the run owns the result.
func newHandler(h Handler) *C.sandlock_handler_t {
	cell := (*C.uintptr_t)(C.malloc(C.size_t(unsafe.Sizeof(C.uintptr_t(0)))))
	*cell = C.uintptr_t(cgo.NewHandle(h))
	nh := C.sandlock_handler_new((C.sandlock_handler_fn)(C.sandlock_go_trampoline),
		unsafe.Pointer(cell), (C.sandlock_ud_free_fn)(C.sandlock_go_release),
		C.SANDLOCK_EXCEPTION_KILL)
	if nh == nil {
		C.sandlock_go_release(unsafe.Pointer(cell))
	}
	return nh
}

// RunWithHandlers runs argv like Run, with handlers deciding the syscalls
// they are registered for (by name: "openat", "connect", ...), after the
// sandbox's own checks.
func (s *Sandbox) RunWithHandlers(argv []string, handlers map[string]Handler) (*Result, error) {
	if len(argv) == 0 {
		return nil, &Error{Code: int(C.SANDLOCK_ERR_INVALID), Msg: "empty command"}
	}
	sb, err := s.build()
	if err != nil {
		return nil, err
	}
	defer C.sandlock_sandbox_free(sb)
	var cs cstrings
	defer cs.free()
	cargv := cArgv(argv, &cs)
	defer C.free(unsafe.Pointer(cargv))
	var regs *C.sandlock_registration_t
	if len(handlers) > 0 {
		regs = (*C.sandlock_registration_t)(C.calloc(C.size_t(len(handlers)),
			C.size_t(unsafe.Sizeof(C.sandlock_registration_t{}))))
		defer C.free(unsafe.Pointer(regs))
		v := unsafe.Slice(regs, len(handlers))
		i := 0
		for name, h := range handlers {
			v[i].syscall = cs.add(name)
			v[i].handler = newHandler(h)
			i++
		}
	}
	var code C.int
	var msg *C.char
	r := C.sandlock_run_with_handlers_err(sb, cargv, C.uint32_t(len(argv)), regs,
		C.size_t(len(handlers)), &code, &msg)
	if r == nil {
		return nil, takeError(code, msg)
	}
	return takeResult(r), nil
}
