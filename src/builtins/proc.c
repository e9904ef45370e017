/*
 * proc.c — /proc as a sandbox should see it (issue 6, item 15).
 *
 * WHY: a sandbox that may read /proc (many programs need /proc/self)
 * would otherwise see every host process (their command lines, status,
 * environment-free but telling files), the sandbox's own init, and kernel
 * files such as /proc/kallsyms, /proc/kcore, /proc/sysrq-trigger or the
 * host's mount table.
 *
 * ON when /proc is readable in the config (sl_proc_readable); then:
 *   - open, creat, openat, openat2 are performed on the caller's behalf by
 *     the run's opener (opener.h) — LAST phase, after user handlers — and
 *     the opener applies sl_proc_policy to the file actually opened, for
 *     every on-behalf open (this builtin's, the presets', a user
 *     handler's): /proc/PID of a process outside the sandbox is ENOENT,
 *     the kernel files of k_deny (and every process's mounts tables) are
 *     EACCES.  Deciding on the opened file leaves a racing thread nothing
 *     to swap.
 *   - getdents64 / getdents are performed on behalf too (on our
 *     pidfd_getfd duplicate of the caller's fd, which shares its file
 *     offset): in a listing of the /proc root, the numeric entries of
 *     processes outside the sandbox are dropped before the entries are
 *     written into the caller's buffer.
 * Sandbox processes are the descendants of the sandbox's init (a child
 * subreaper: nothing escapes its subtree); init itself is outside.
 *
 * WHY NOT LANDLOCK: the --deny carve-out grants each entry of /proc that
 * exists when the sandbox is built, so every /proc/PID made later (the
 * command's own /proc/self) would be unreachable.  The top-level kernel
 * files therefore need this dynamic check.
 *
 * LIMITS: stat, access, readlink and the other path calls on /proc/PID
 * are not filtered (they reveal that a pid exists, not what it runs:
 * Landlock's ptrace scope already refuses the ptrace-guarded files of
 * processes outside the sandbox); and a handler on these syscalls cannot
 * be deferred while /proc is readable (a worker's CONTINUE would skip
 * this builtin).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "opener/dirsort.h"
#include "net/portmap.h"
#include "opener/opener.h"
#include "opener/procpolicy.h"
#include "opener/served.h"
#include "run/proctree.h"
#include "syscalls.h"
#include "builtins/builtin.h"
#include "builtins/proc.h"
#include "supervisor/services.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define PROC_ROOT_INO 1
#define MAX_DENTS (64 * 1024) /* one on-behalf getdents reads at most this */

/* ---------------- the builtin ---------------- */

struct proc_state {
	int procfd; /* /proc, for sl_proc_stat */
	struct sl_dirsort *sorted; /* deterministic_dirs, else NULL */
};

/* Opens go through the opener also for the views of other files
 * (virtfiles.h: the CPU files, /dev/urandom), listings for the sort. */
bool sl_proc_opens_on_behalf(const struct sandlock_sandbox *cfg)
{
	return sl_proc_readable(cfg) || cfg->num_cpus || cfg->has_random_seed;
}

static bool lists_on_behalf(const struct sandlock_sandbox *cfg)
{
	return sl_proc_readable(cfg) || cfg->deterministic_dirs;
}

/* /proc readable is not refused without a supervisor (Landlock grants
 * it; the /proc view is this builtin's, docs/limits.md); sorted listings
 * cannot be given at all. */
static const char *proc_refusal(const struct sandlock_sandbox *cfg)
{
	return cfg->deterministic_dirs ? "deterministic_dirs (needs the supervisor)" : NULL;
}

static int proc_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	const int *opens;
	size_t n = sl_sys_open_family(&opens);
	if (sl_proc_opens_on_behalf(cfg) && sl_traps_add_all(out, opens, n) < 0)
		return -1;
	const int *list;
	size_t nlist = sl_sys_dir_listing(&list);
	if (lists_on_behalf(cfg) && sl_traps_add_all(out, list, nlist) < 0)
		return -1;
	return 0;
}

static int proc_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                     char **msg)
{
	(void)sv;
	if (!sl_proc_opens_on_behalf(cfg) && !lists_on_behalf(cfg))
		return 0;
	struct proc_state *s = calloc(1, sizeof(*s));
	if (!s) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	if (cfg->deterministic_dirs && !(s->sorted = sl_dirsort_new())) {
		free(s);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->procfd = sl_fd_high(open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)); /* off 0..2 */
	if (s->procfd < 0) {
		sl_dirsort_free(s->sorted);
		free(s);
		*msg = sl_strdup("cannot open /proc");
		return -1;
	}
	*state = s;
	return 0;
}

static void proc_free(void *state)
{
	struct proc_state *s = state;
	if (!s)
		return;
	close(s->procfd);
	sl_dirsort_free(s->sorted);
	free(s);
}

bool sl_open_on_behalf(const struct sl_call *call, sl_opener_check_fn check, void *ud,
                       sandlock_action_t *act)
{
	struct sl_opener *op = call->sv->opener; /* the run's (services.h) */
	sandlock_opened_t o;
	int e = op ? sl_opener_open_call(op, call->listener, call->n, call->mem, check, ud, &o)
	           : EPERM; /* no opener: refuse rather than let the kernel open it */
	if (e) {
		sandlock_action_set_errno(act, e);
		return true;
	}
	sandlock_string_free(o.path);
	sandlock_action_set_inject_fd_send(act, o.fd, o.newfd_flags);
	return true;
}

/* True if our fd is the root directory of a procfs. */
static bool is_proc_root(int fd)
{
	struct statfs sf;
	struct stat st;
	return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC && fstat(fd, &st) == 0 &&
	       st.st_ino == PROC_ROOT_INO;
}

/* Keep the entries of buf[0..len) a sandbox may see; the new length.
 * getdents64 entries carry the name at offset 19, getdents at 18. */
static size_t filter_dents(const struct proc_state *s, pid_t init, char *buf, size_t len,
                           size_t name_off)
{
	size_t in = 0, out = 0;
	while (in + name_off < len) {
		unsigned short reclen;
		memcpy(&reclen, buf + in + 16, sizeof reclen);
		if (reclen == 0 || in + reclen > len)
			break; /* malformed: drop the rest rather than loop */
		long pid = sl_proc_leading_pid(buf + in + name_off);
		if (pid < 0 || sl_proc_in_sandbox(s->procfd, init, pid)) {
			memmove(buf + out, buf + in, reclen);
			out += reclen;
		}
		in += reclen;
	}
	return out;
}

/* One batch of getdents64 (or getdents: nr) on fd, the /proc root's
 * foreign pids dropped; never an empty batch before the end. */
struct producer {
	const struct proc_state *s;
	pid_t init;
	int nr;
	bool filter;
};

static long produce(void *ud, int fd, char *buf, size_t cap)
{
	const struct producer *p = ud;
	size_t name_off = p->nr == __NR_getdents64 ? 19 : 18;
	for (;;) {
		long got = syscall(p->nr, fd, buf, cap);
		if (got < 0)
			return -errno;
		size_t keep = p->filter ? filter_dents(p->s, p->init, buf, (size_t)got, name_off)
		                        : (size_t)got;
		/* Every entry of this batch hidden: read on, or the caller
		 * would take an empty batch for the end of the directory. */
		if (got > 0 && keep == 0)
			continue;
		return (long)keep;
	}
}

/* getdents64/getdents on our duplicate of the caller's fd (which shares
 * its offset): 0 or an errno, with *ret the byte count written into the
 * caller's buffer.  deterministic_dirs: the whole listing, sorted
 * (dirsort.h), always produced with getdents64. */
static int dents_on_behalf(const struct proc_state *s, const struct sl_call *call, long *ret)
{
	const sandlock_notif_t *n = call->n;
	int cfd = (int)(uint32_t)n->args[0];
	struct sl_child_file cf;
	int ge = sl_child_file(call->listener, n, cfd, &cf);
	if (ge < 0)
		return ge == -ENXIO ? ENOTDIR : -ge;
	int fd = cf.fd;
	size_t cap = (size_t)(uint32_t)n->args[2];
	if (cap > MAX_DENTS)
		cap = MAX_DENTS;
	char *buf = malloc(cap ? cap : 1);
	if (!buf) {
		sl_child_file_done(call->listener, n, &cf, false);
		return ENOMEM;
	}
	struct producer p = { s, call->init, n->syscall_nr, is_proc_root(fd) };
	long got;
	if (s->sorted) {
		p.nr = __NR_getdents64;
		got = sl_dirsort_getdents(s->sorted, (pid_t)n->pid, cfd, fd,
		                          n->syscall_nr == __NR_getdents64, produce, &p, buf, cap);
	} else {
		got = produce(&p, fd, buf, cap);
	}
	int e = got < 0 ? (int)-got : 0;
	if (got > 0 && sandlock_mem_poke(call->mem, n->args[1], buf, (size_t)got) != 0)
		e = EFAULT;
	*ret = got;
	free(buf);
	int de = sl_child_file_done(call->listener, n, &cf, got >= 0);
	return e ? e : -de;
}

static bool proc_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct proc_state *s = state;
	int nr = call->n->syscall_nr;
	if (!s) { /* not reachable: no syscalls are trapped without state */
		sandlock_action_set_errno(act, EPERM);
		return true;
	}
	if (sl_sys_is_open_family(nr))
		return sl_open_on_behalf(call, NULL, NULL, act);
	long ret = 0;
	int e = dents_on_behalf(s, call, &ret);
	if (e)
		sandlock_action_set_errno(act, e);
	else
		sandlock_action_set_return_value(act, ret);
	return true;
}

/* A TCP socket table of procfs (/proc/PID/net/tcp, .../tcp6)? */
static bool is_proc_net_tcp(int fd, const char *real)
{
	size_t n = strlen(real);
	return strncmp(real, "/proc/", 6) == 0 &&
	       ((n > 8 && strcmp(real + n - 8, "/net/tcp") == 0) ||
	        (n > 9 && strcmp(real + n - 9, "/net/tcp6") == 0)) &&
	       sl_on_procfs(fd);
}

/* port_remap: the TCP socket tables show the ports the guest bound (the
 * virtual ones of the run's port map), not the real ones. */
static int proc_serve(void *state, const struct sl_services *sv, const char *real,
                      pid_t caller, int *fd)
{
	(void)state;
	(void)caller;
	if (!sv->ports || !is_proc_net_tcp(*fd, real))
		return -1;
	sl_buf b = { 0 };
	int e = sl_serve_read(*fd, &b);
	if (!e && !b.data)
		e = sl_serve_text("tcp", "", fd);
	else if (!e) {
		sl_portmap_rewrite_proc_net(sv->ports, (char *)b.data);
		e = sl_serve_text("tcp", (char *)b.data, fd);
	}
	sl_buf_free(&b);
	return e;
}

const struct sl_builtin sl_builtin_proc = {
	.name = "/proc view",
	.refusal = proc_refusal,
	.phase = SL_PHASE_LAST,
	.needs_opener = true,
	.syscalls = proc_syscalls,
	.init = proc_init,
	.free = proc_free,
	.decide = proc_decide,
	.serve = proc_serve,
};
