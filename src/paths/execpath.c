/*
 * execpath.c — giving a trapped exec another path (see execpath.h).
 *
 * The scratch space: /proc/TID/syscall shows the blocked thread's stack
 * pointer.  Below it (past the x86-64 red zone, with a margin) nothing of
 * the thread's is live while it waits in the kernel, and a signal handler
 * cannot run there before the call returns.  Relocated strings go there,
 * highest first; the stack mapping already covers them in practice (a
 * write that fails is answered ENAMETOOLONG before anything is changed:
 * the strings and slots are written before the path, and a failed write
 * there leaves the caller's own strings untouched).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "compat.h"
#include "supervisor/childmem.h"
#include "paths/execpath.h"
#include "opener/opener.h"
#include "run/pause.h"
#include "run/proctree.h"
#include "supervisor/services.h"
#include "syscalls.h"
#include "util.h"

#define MAX_VEC 65536          /* argv/envp entries looked at */
#define MAX_STR (128 * 1024)   /* the kernel's MAX_ARG_STRLEN */
#define SCRATCH_GAP 512        /* below sp: red zone (128) and a margin */
#define SCRATCH_MAX (256 * 1024)
#define EXEC_WAIT_ROUNDS 20000 /* x 100 us: 2 s at most */

/* The address of the call's path string (execve a[0], execveat a[1]). */
static uint64_t exec_path_addr(const sandlock_notif_t *n)
{
	struct sl_exec_args x;
	sl_sys_exec_args(n->syscall_nr, n->args, &x);
	return x.path;
}

/* ---------------- relocating argv/envp strings ---------------- */

struct moved {
	uint64_t slot; /* address of the argv/envp pointer */
	char *s;       /* the string (sandlock_mem_read_string's) */
	size_t len;    /* with its NUL */
};

struct moves {
	struct moved *v;
	size_t n, cap, bytes;
};

static void moves_free(struct moves *m)
{
	for (size_t i = 0; i < m->n; i++)
		sandlock_string_free(m->v[i].s);
	free(m->v);
}

static bool meets(uint64_t a, uint64_t alen, uint64_t lo, uint64_t hi)
{
	return a < hi && a + alen > lo;
}

static int add_move(struct moves *m, uint64_t slot, char *s, size_t len)
{
	/* Bounded before anything is kept: the guest chooses how many slots
	 * point into the range. */
	if (m->bytes + ((len + 15) & ~(size_t)15) > SCRATCH_MAX)
		return -ENAMETOOLONG;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 4;
		struct moved *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	m->v[m->n++] = (struct moved){ slot, s, len };
	m->bytes += (len + 15) & ~(size_t)15;
	return 0;
}

/*
 * The strings of the NULL-terminated pointer array arr that meet [lo, hi)
 * go to *m.  The array itself meeting it cannot be helped: ENAMETOOLONG.
 * A string that cannot be read: EFAULT (the kernel would fail the same).
 */
static int scan_vec(const struct sl_call *call, uint64_t arr, uint64_t lo, uint64_t hi,
                    struct moves *m)
{
	for (unsigned i = 0; arr && i < MAX_VEC; i++) {
		uint64_t slot = arr + (uint64_t)i * 8, p;
		if (meets(slot, 8, lo, hi))
			return -ENAMETOOLONG;
		if (sandlock_mem_peek(call->mem, slot, &p, sizeof p) != 0)
			return -EFAULT;
		if (!p)
			return 0;
		/* Only a string that starts before hi and less than one
		 * string's length before lo can reach the range. */
		if (p >= hi || p + MAX_STR < lo)
			continue;
		char *s = sandlock_mem_read_string(call->mem, p, MAX_STR);
		if (!s)
			return -EFAULT;
		size_t len = strlen(s) + 1;
		int r = meets(p, len, lo, hi) ? add_move(m, slot, s, len) : 1;
		if (r)
			sandlock_string_free(s);
		if (r < 0)
			return r;
	}
	return arr ? -E2BIG : 0;
}

/* The blocked caller's stack pointer, from /proc/TID/syscall ("nr args... sp pc"). */
static int caller_sp(const struct sl_call *call, uint64_t *sp)
{
	int dir = sl_child_procdir(call->listener, call->n);
	if (dir < 0)
		return dir;
	char buf[512];
	ssize_t len = sl_read_small_at(dir, "syscall", buf, sizeof buf);
	close(dir);
	if (len <= 0)
		return -EPERM;
	char *p = buf, *end;
	long nr = strtol(p, &end, 10);
	if (end == p || nr != call->n->syscall_nr)
		return -EPERM;
	uint64_t v = 0;
	for (int i = 0; i < 7; i++) { /* six arguments, then sp */
		p = end;
		v = strtoull(p, &end, 16);
		if (end == p)
			return -EPERM;
	}
	*sp = v;
	return 0;
}

/* Copy each moved string below sp (the caller's, read by caller_sp while
 * it sat untouched in its call) and point its slot at the copy. */
static int place_moves(const struct sl_call *call, const struct moves *m, uint64_t sp,
                       uint64_t lo, uint64_t hi)
{
	if (!m->n)
		return 0;
	if (!sp || m->bytes > SCRATCH_MAX || sp < SCRATCH_GAP + m->bytes)
		return -ENAMETOOLONG;
	uint64_t at = (sp - SCRATCH_GAP) & ~(uint64_t)15;
	if (meets(at - m->bytes, m->bytes, lo, hi))
		return -ENAMETOOLONG;
	for (size_t i = 0; i < m->n; i++) {
		at -= (m->v[i].len + 15) & ~(size_t)15;
		if (sandlock_mem_poke(call->mem, at, m->v[i].s, m->v[i].len) != 0)
			return -ENAMETOOLONG;
	}
	at = (sp - SCRATCH_GAP) & ~(uint64_t)15;
	for (size_t i = 0; i < m->n; i++) {
		at -= (m->v[i].len + 15) & ~(size_t)15;
		if (sandlock_mem_poke(call->mem, m->v[i].slot, &at, sizeof at) != 0)
			return -EFAULT;
	}
	return 0;
}

/* ---------------- a parent sharing the memory ---------------- */

/* The caller's Tgid and PPid from /proc/TID/status; false if unreadable. */
static bool caller_ids(const struct sl_call *call, pid_t *tgid, pid_t *ppid)
{
	int dir = sl_child_procdir(call->listener, call->n);
	char buf[1024];
	ssize_t len = dir >= 0 ? sl_read_small_at(dir, "status", buf, sizeof buf) : -1;
	if (dir >= 0)
		close(dir);
	const char *t = len > 0 ? strstr(buf, "\nTgid:") : NULL;
	const char *p = len > 0 ? strstr(buf, "\nPPid:") : NULL;
	*tgid = t ? (pid_t)strtol(t + 6, NULL, 10) : 0;
	*ppid = p ? (pid_t)strtol(p + 6, NULL, 10) : 0;
	return *tgid > 0;
}

/*
 * Without kcmp: Docker's and podman's default seccomp profiles refuse it
 * without CAP_SYS_PTRACE.  A marker is written at addr through a's
 * /proc mem and looked for through b's; a's bytes are put back.  a is
 * the caller, stopped (in its trapped call, or in its stop after it):
 * it never sees the marker.
 */
static bool marker_shared(pid_t a, pid_t b, uint64_t addr)
{
	char pa[40], pb[40];
	snprintf(pa, sizeof pa, "/proc/%d/mem", (int)a);
	snprintf(pb, sizeof pb, "/proc/%d/mem", (int)b);
	int fa = open(pa, O_RDWR | O_CLOEXEC), fb = open(pb, O_RDONLY | O_CLOEXEC);
	uint64_t orig = 0, seen = 1;
	bool shared = false;
	if (fa >= 0 && fb >= 0 && addr && pread(fa, &orig, 8, (off_t)addr) == 8 &&
	    pread(fb, &seen, 8, (off_t)addr) == 8 && seen == orig) {
		uint64_t mark = orig ^ 0x9e3779b97f4a7c15ull; /* differs from orig */
		if (pwrite(fa, &mark, 8, (off_t)addr) == 8) {
			shared = pread(fb, &seen, 8, (off_t)addr) == 8 && seen == mark;
			(void)!pwrite(fa, &orig, 8, (off_t)addr);
		}
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return shared;
}

/* Do a and b share their memory?  kcmp, else a marker at addr (mapped in
 * a: the bytes the rewrite changes). */
static bool shares_vm(pid_t a, pid_t b, uint64_t addr)
{
	long r = syscall(__NR_kcmp, a, b, KCMP_VM, 0, 0);
	if (r >= 0 || (errno != EPERM && errno != ENOSYS))
		return r == 0;
	return marker_shared(a, b, addr);
}

static void signal_fd(int pidfd, int sig)
{
	if (pidfd >= 0)
		(void)syscall(__NR_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static void undo_clear(struct sl_exec_undo *u)
{
	for (size_t i = 0; i < u->n; i++)
		free(u->v[i].old);
	free(u->v);
	if (u->parent && u->parent_pidfd >= 0)
		close(u->parent_pidfd);
	if (u->parent && u->caller_pidfd >= 0)
		close(u->caller_pidfd);
	if (u->parent && u->mem_fd >= 0)
		close(u->mem_fd);
	memset(u, 0, sizeof *u); /* parent 0: the fds are not ours */
}

/* Remember the caller's bytes at [addr, addr + len) before they change. */
static int undo_save(const struct sl_call *call, struct sl_exec_undo *u, uint64_t addr, size_t len)
{
	struct sl_exec_piece *v = realloc(u->v, (u->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	u->v = v;
	unsigned char *old = malloc(len);
	if (!old)
		return -ENOMEM;
	if (sandlock_mem_peek(call->mem, addr, old, len) != 0) {
		free(old);
		return -EFAULT;
	}
	u->v[u->n++] = (struct sl_exec_piece){ addr, len, old };
	return 0;
}

/* Put every saved piece back (through the mem fd opened while the memory
 * was shared) and let the held processes go on.  A SIGCONT also drops a
 * stop still pending (a vfork parent that never woke). */
static void undo_apply(struct sl_exec_undo *u)
{
	for (size_t i = u->n; i-- > 0;)
		(void)!pwrite(u->mem_fd, u->v[i].old, u->v[i].len, (off_t)u->v[i].addr);
	signal_fd(u->parent_pidfd, SIGCONT);
	signal_fd(u->caller_pidfd, SIGCONT);
	undo_clear(u);
}

/*
 * The parent pp that shares the caller's memory, pinned: a pidfd first,
 * then the memory compared, /proc/PP/mem opened, and both checked again,
 * so a parent that died and whose pid was reused is never touched.
 * Never the sandbox's init: its vfork child (the command) execs from a
 * buffer init does not read again.  false: not shared (or gone).
 */
static bool pin_parent(const struct sl_call *call, struct sl_exec_undo *u, pid_t pp,
                       uint64_t addr)
{
	if (pp <= 1 || pp == call->init)
		return false;
	u->parent = pp; /* from here the fds are ours, -1 until opened */
	u->parent_pidfd = u->caller_pidfd = u->mem_fd = -1;
	u->parent_pidfd = (int)syscall(__NR_pidfd_open, pp, 0);
	if (u->parent_pidfd < 0 || !shares_vm(u->tid, pp, addr))
		return false;
	char mem[64];
	snprintf(mem, sizeof mem, "/proc/%d/mem", (int)pp);
	u->mem_fd = open(mem, O_RDWR | O_CLOEXEC);
	return u->mem_fd >= 0 && shares_vm(u->tid, pp, addr) &&
	       syscall(__NR_pidfd_send_signal, u->parent_pidfd, 0, NULL, 0) == 0;
}

/*
 * A caller sharing its memory with its parent (vfork, posix_spawn): the
 * bytes about to be overwritten are saved, and both are stopped before
 * the call goes on.  The caller takes its stop when execve returns into
 * the new image or fails, which is how sl_exec_answered knows the exec is
 * over; the parent takes its stop when the exec releases it.
 */
static int undo_begin(const struct sl_call *call, struct sl_exec_undo *u, const struct moves *m,
                      uint64_t addr, size_t len)
{
	undo_clear(u);
	pid_t tgid, pp;
	if (!caller_ids(call, &tgid, &pp))
		return -ESRCH;
	u->tid = (pid_t)call->n->pid;
	u->tgid = tgid;
	if (!pin_parent(call, u, pp, addr)) {
		undo_clear(u);
		return 0;
	}
	u->caller_pidfd = (int)syscall(__NR_pidfd_open, tgid, 0);
	int r = u->caller_pidfd < 0 ? -ESRCH : undo_save(call, u, addr, len);
	for (size_t i = 0; !r && i < m->n; i++)
		r = undo_save(call, u, m->v[i].slot, 8);
	if (!r && syscall(__NR_pidfd_send_signal, u->parent_pidfd, SIGSTOP, NULL, 0) < 0)
		r = -errno;
	if (!r && syscall(__NR_pidfd_send_signal, u->caller_pidfd, SIGSTOP, NULL, 0) < 0)
		r = -errno;
	if (r) {
		signal_fd(u->parent_pidfd, SIGCONT);
		undo_clear(u);
		return -ENAMETOOLONG;
	}
	u->id = call->n->id;
	return 0;
}

/* pid's state letter (0: gone). */
static char task_state(pid_t pid)
{
	char name[24], state;
	long pp, pg;
	snprintf(name, sizeof name, "%d", (int)pid);
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool ok = procfd >= 0 && sl_proc_stat(procfd, name, &state, &pp, &pg);
	if (procfd >= 0)
		close(procfd);
	return ok ? state : 0;
}

int sl_path_swap(const struct sl_call *call, uint64_t addr, const char *path,
                 struct sl_exec_undo *u)
{
	undo_clear(u);
	pid_t tgid, pp;
	if (!caller_ids(call, &tgid, &pp))
		return -ESRCH;
	char mem[64];
	snprintf(mem, sizeof mem, "/proc/%d/mem", (int)call->n->pid);
	u->parent = tgid; /* from here the fds are ours, -1 until opened */
	u->tid = (pid_t)call->n->pid;
	u->tgid = tgid;
	u->self = true;
	u->caller_pidfd = -1;
	u->parent_pidfd = (int)syscall(__NR_pidfd_open, tgid, 0);
	u->mem_fd = open(mem, O_RDWR | O_CLOEXEC);
	size_t n = strlen(path) + 1;
	int r = u->parent_pidfd < 0 || u->mem_fd < 0 || !sl_notif_valid(call->listener, call->n->id)
	                ? -ESRCH : undo_save(call, u, addr, n);
	if (r == -EFAULT) /* the host path would run past the caller's memory */
		r = -ENAMETOOLONG;
	if (!r && syscall(__NR_pidfd_send_signal, u->parent_pidfd, SIGSTOP, NULL, 0) < 0)
		r = -errno;
	if (r) {
		undo_clear(u);
		return r;
	}
	u->id = call->n->id;
	if (sandlock_mem_poke(call->mem, addr, path, n) != 0) {
		undo_apply(u);
		return -ENAMETOOLONG;
	}
	return 0;
}

/* Wait (bounded) until pid's state is a stop, or it is gone. */
static void wait_stopped(pid_t pid)
{
	struct timespec t = { 0, 100000 };
	for (int i = 0; i < EXEC_WAIT_ROUNDS; i++) {
		char st = task_state(pid);
		if (!st || st == 'T' || st == 't' || st == 'Z' || st == 'X')
			return;
		nanosleep(&t, NULL);
	}
}

void sl_exec_undo_release(struct sl_exec_undo *u)
{
	if (u->id)
		undo_apply(u);
	else
		undo_clear(u);
}

void sl_exec_answered(struct sl_exec_undo *u, const sandlock_notif_t *n)
{
	if (!u->id || u->id != n->id)
		return;
	/* The caller takes its stop as its call returns (an exec: in the
	 * new image, or failed). */
	sl_freeze_wait_stopped(u->self ? u->parent : u->tgid, u->tid);
	/* A failed exec leaves the vfork parent asleep (its child is alive,
	 * stopped): restore now.  Otherwise the exec released it and it
	 * takes its stop before running again. */
	if (!u->self && !shares_vm(u->tid, u->parent, u->n ? u->v[0].addr : 0))
		wait_stopped(u->parent);
	undo_apply(u);
}

/* The argv/envp strings a path of len bytes at the call's path would
 * cover, into *m.  0, or -ENAMETOOLONG when it would cover the arrays. */
static int plan(const struct sl_call *call, size_t len, struct moves *m)
{
	struct sl_exec_args x;
	sl_sys_exec_args(call->n->syscall_nr, call->n->args, &x);
	uint64_t lo = x.path, hi = lo + len;
	if (!lo || hi < lo)
		return -EFAULT;
	int r = scan_vec(call, x.argv, lo, hi, m);
	return r ? r : scan_vec(call, x.envp, lo, hi, m);
}

/* A #! script must stay openable by its interpreter after the exec. */
static bool is_script(int fd)
{
	char head[2] = { 0 };
	return pread(fd, head, 2, 0) == 2 && head[0] == '#' && head[1] == '!';
}

/* The short form's directory of fds: /dev/fd where the host has it (the
 * shortest), else /proc/self/fd. */
static const char *short_prefix(void)
{
	struct stat st;
	return stat("/dev/fd", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/fd/" : "/proc/self/fd/";
}

/* The bytes planned for a short form: the prefix, four digits, the NUL. */
static size_t short_len(void)
{
	return strlen(short_prefix()) + 4 + 1;
}

/*
 * The short form: the file, opened by the confined opener (so Landlock
 * and the caller's rights decide as for any read: the fd gives the guest
 * nothing it could not open itself), installed in the caller without
 * answering the call, named through /dev/fd (/proc/self/fd where there
 * is no /dev/fd).  Close on exec for a binary; a script's interpreter
 * opens the name after the exec, so there the fd stays open.  Into out,
 * or -errno (ENAMETOOLONG when the file cannot be opened so).
 */
static int short_path(const struct sl_call *call, const char *path, char *out, size_t cap)
{
	/* The run's opener, from its services (services.h), as every builtin
	 * reaches it: no lookup by listener under the registry's lock. */
	struct sl_opener *op = call->sv ? call->sv->opener : NULL;
	int rd = -1;
	if (!op || path[0] != '/' || sl_opener_open_at(op, call->listener, call->n, AT_FDCWD, path,
	                             O_RDONLY | O_CLOEXEC, RESOLVE_NO_SYMLINKS, &rd) != 0)
		return -ENAMETOOLONG;
	struct seccomp_notif_addfd a;
	memset(&a, 0, sizeof a);
	a.id = call->n->id;
	a.srcfd = (uint32_t)rd;
	a.newfd_flags = is_script(rd) ? 0 : O_CLOEXEC;
	int nfd;
	do
		nfd = ioctl(call->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
	while (nfd < 0 && errno == EINTR);
	int e = errno;
	close(rd);
	if (nfd < 0)
		return -e;
	/* Planned for four digits (short_prefix): a larger fd number does not
	 * fit (the installed fd is close-on-exec, or a script's to read). */
	return snprintf(out, cap, "%s%d", short_prefix(), nfd) < (int)short_len() ? 0 : -ENAMETOOLONG;
}

int sl_exec_set_path(const struct sl_call *call, const char *path, bool short_ok,
                     struct sl_exec_undo *undo)
{
	/* Planned for the longest short form; the fd is installed last,
	 * after every step that can fail but the final write. */
	char shortp[40] = "";
	bool use_short = false;
	struct moves m = { 0 };
	int r = plan(call, strlen(path) + 1, &m);
	if (r == -ENAMETOOLONG && short_ok) {
		/* The full path would run into argv or envp itself (dash puts
		 * argv right after the command's string). */
		moves_free(&m);
		memset(&m, 0, sizeof m);
		r = plan(call, short_len(), &m);
		use_short = true;
	}
	uint64_t addr = exec_path_addr(call->n), sp = 0;
	size_t len = use_short ? short_len() : strlen(path) + 1;
	/* Before any stop: /proc/TID/syscall needs the caller as it sits. */
	if (!r && m.n && caller_sp(call, &sp) < 0)
		r = -ENAMETOOLONG;
	if (!r)
		r = undo_begin(call, undo, &m, addr, len);
	if (!r)
		r = place_moves(call, &m, sp, addr, addr + len);
	if (!r && use_short)
		r = short_path(call, path, shortp, sizeof shortp);
	const char *use = use_short ? shortp : path;
	if (!r && sandlock_mem_poke(call->mem, addr, use, strlen(use) + 1) != 0)
		r = -EFAULT;
	if (r && undo->id) /* the call is refused: the memory is given back now */
		undo_apply(undo);
	moves_free(&m);
	return r;
}
