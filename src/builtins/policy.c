/*
 * policy.c — policy_fn: a user callback deciding on events of the running
 * sandbox, and the runtime restrictions it may add (sandlock.h, "Dynamic
 * policy").  Trapped only when a policy_fn is set.
 *
 * Events and why each one is TOCTOU-safe:
 *  - exec (execve, execveat): the callback sees argv.  A second thread (or
 *    a process sharing the memory) could rewrite argv after we read it and
 *    before the kernel copies it, and the kernel would run what was never
 *    checked.  So before reading, every task of the sandbox but the
 *    exec'ing thread is stopped (pause.c, sl_freeze_except: SIGSTOP each
 *    process, then wait until each of their threads is stopped), and they
 *    stay stopped until the answer has been sent and the exec'ing thread
 *    has left execve (the kernel copied argv by then).  The cgroup
 *    freezer cannot do this: it would freeze the exec'ing thread too,
 *    which sits in a seccomp wait only a fatal signal interrupts, so the
 *    group would never report frozen.  If the freeze cannot be completed
 *    the exec is refused (EPERM): never decided on memory that can move.
 *    The freeze stops tasks, not the kernel: an AIO completion or the
 *    clear_child_tid write of a dying CLONE_VM helper still changes memory.
 *    So the outcome is checked too: the caller, stopped after its execve
 *    before the new image's first instruction, is killed when that image's
 *    argv (as the kernel copied it) is not the argv the callback allowed.
 *  - network (connect, bind, sendto/sendmsg with an address): netdest.c
 *    copies the address once, asks sl_policy_net, and performs the call
 *    itself with that copy.  This builtin only marks the call as seen
 *    (FIRST phase) so that netdest knows which state to ask.
 *  - fork/vfork/clone: no memory is read; "exit_group": only KILL counts.
 *
 * Runtime restrictions (the context; its methods, which only record them,
 * are in policyctx.c):
 *  - deny_path: from then on every open (open, creat, openat, openat2) is
 *    performed on the caller's behalf by the opener (opener.c), and the
 *    check below refuses a file whose real path (as the kernel reports it
 *    for the opened fd) lies at or under a denied path, or which is the
 *    very inode a denied path named (a hard link elsewhere).  The decision
 *    is on the file opened, not on the path string.  Opens before the
 *    first deny_path go their usual way.  Not covered: calls that use a
 *    path without opening it (stat, unlink, rename, exec of the file).
 *  - restrict_network / grant_network: an allow-list of IPs, checked in
 *    sl_policy_net on the copied address.
 *  - kill: the verdict becomes KILL.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/execcheck.h"
#include "opener/opener.h"
#include "run/pause.h"
#include "run/proctree.h"
#include "syscalls.h"
#include "builtins/policy.h"
#include "builtins/policyctx.h"
#include "builtins/proc.h"

#define POL_MAX_ARGS 4096          /* argv entries read for an event */
#define POL_MAX_ARG_LEN (128 * 1024) /* bytes of one argument (MAX_ARG_STRLEN) */
#define POL_MAX_ARGV_BYTES (1024 * 1024)

bool sl_policy_freeze_disabled;
bool sl_policy_verify_disabled;

/* The context of the call being dispatched on this (the supervisor)
 * thread, for sl_policy_net; set by pol_decide, cleared once the call
 * was answered.  Builtins of one chain run on one thread (calls with a
 * LAST builtin are never deferred). */
static __thread struct sandlock_policy_ctx *sl_policy_current;

/* ---------------- calling the callback ---------------- */

static pid_t parent_of(pid_t tid)
{
	char name[24], state;
	long pp = 0, pg;
	snprintf(name, sizeof name, "%d", (int)tid);
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return 0;
	if (!sl_proc_stat(procfd, name, &state, &pp, &pg))
		pp = 0;
	close(procfd);
	return (pid_t)pp;
}

/* The process (thread group) of thread tid, or -1. */
static pid_t tgid_of(pid_t tid)
{
	char path[48], line[128];
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	long tgid = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Tgid: %ld", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return (pid_t)tgid;
}

/* The callback's answer: 0 allow, a positive errno, or SL_POLICY_KILL. */
static int run_fn(sandlock_policy_ctx_t *ctx, sandlock_policy_event_t *ev)
{
	ev->parent_pid = parent_of(ev->pid);
	int32_t v = ctx->fn(ctx->ud, ev, ctx);
	if (ctx->kill || v == SANDLOCK_VERDICT_KILL)
		return SL_POLICY_KILL;
	if (v == SANDLOCK_VERDICT_ALLOW || v == SANDLOCK_VERDICT_AUDIT)
		return 0;
	if (v > 0 && v < 4096)
		return v;
	return EPERM; /* DENY, and any other value: refuse rather than guess */
}

static void set_verdict(sandlock_action_t *act, int v)
{
	if (v == SL_POLICY_KILL)
		sandlock_action_set_kill(act, SIGKILL, 0);
	else if (v)
		sandlock_action_set_errno(act, v);
	else
		sandlock_action_set_continue(act);
}

/* ---------------- exec ---------------- */

static void free_argv(char **argv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandlock_string_free(argv[i]);
	free(argv);
}

/* Read the NULL-terminated argv array at addr.  0 or an errno. */
static int read_argv(sandlock_mem_t *m, uint64_t addr, char ***out, size_t *argc)
{
	char **v = calloc(POL_MAX_ARGS + 1, sizeof(*v));
	size_t n = 0, bytes = 0;
	int e = v ? 0 : ENOMEM;
	for (; !e && addr && n < POL_MAX_ARGS; n++) {
		uint64_t p;
		if (sandlock_mem_peek(m, addr + n * sizeof p, &p, sizeof p) != 0)
			e = EFAULT;
		else if (!p)
			break;
		else if (!(v[n] = sandlock_mem_read_string(m, p, POL_MAX_ARG_LEN)))
			e = EFAULT;
		else if ((bytes += strlen(v[n]) + 1) > POL_MAX_ARGV_BYTES)
			e = E2BIG;
	}
	if (!e && n == POL_MAX_ARGS)
		e = E2BIG;
	if (e) {
		free_argv(v, n + 1);
		return e;
	}
	*out = v;
	*argc = n;
	return 0;
}

/* The allowed argv as the kernel will lay it out (an empty argv gets ""
 * since Linux 5.18), for pol_answered to compare with the new image.
 * Without memory for it nothing is kept, and the check kills (fail closed). */
static void keep_seen(sandlock_policy_ctx_t *ctx, char **argv, size_t argc)
{
	size_t len = argc ? 0 : 1;
	for (size_t i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	free(ctx->seen);
	ctx->seen = calloc(1, len);
	ctx->seen_len = len;
	for (size_t i = 0, at = 0; ctx->seen && i < argc; i++) {
		memcpy(ctx->seen + at, argv[i], strlen(argv[i]) + 1);
		at += strlen(argv[i]) + 1;
	}
}

/*
 * After an allowed exec, while the caller is still stopped before its
 * first instruction: a new image whose argv is not what the callback saw
 * is killed.  (Memory changed under the freeze by the kernel itself, see
 * execcheck.c.)  A failed exec leaves the old image, which is not looked at.
 */
static void verify_exec(sandlock_policy_ctx_t *ctx)
{
	pid_t pid = ctx->frozen_tgid;
	if (!ctx->seen_len || !sl_exec_image_changed(pid, &ctx->before))
		return;
	if (ctx->seen && sl_exec_argv_is(pid, ctx->seen, ctx->seen_len) == 1)
		return;
	int pfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (pfd >= 0) {
		(void)syscall(__NR_pidfd_send_signal, pfd, SIGKILL, NULL, 0);
		close(pfd);
	}
}

static bool decide_exec(sandlock_policy_ctx_t *ctx, const struct sl_call *call,
                        sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	/* From here until the answer went out (pol_answered), nothing of the
	 * sandbox but the caller runs. */
	if (!sl_policy_freeze_disabled) {
		ctx->frozen_active = true;
		ctx->frozen_id = n->id;
		ctx->frozen_tgid = tgid_of((pid_t)n->pid);
		if (ctx->frozen_tgid <= 0 ||
		    sl_freeze_except(call->init, (pid_t)n->pid, &ctx->frozen) < 0) {
			sandlock_action_set_errno(act, EPERM);
			return true;
		}
		sl_exec_image(ctx->frozen_tgid, &ctx->before);
		if (!ctx->before.ok && !sl_policy_verify_disabled) {
			sandlock_action_set_errno(act, EPERM); /* could not tell the new image */
			return true;
		}
	}
	struct sl_exec_args x;
	sl_sys_exec_args(n->syscall_nr, n->args, &x);
	uint64_t argv_addr = x.argv;
	char **argv = NULL;
	size_t argc = 0;
	int e = read_argv(call->mem, argv_addr, &argv, &argc);
	if (e) {
		sandlock_action_set_errno(act, e);
		return true;
	}
	sandlock_policy_event_t ev;
	memset(&ev, 0, sizeof ev);
	ev.syscall = n->syscall_nr == __NR_execveat ? "execveat" : "execve";
	ev.category = "process";
	ev.pid = (int32_t)n->pid;
	ev.argv = (const char *const *)argv;
	ev.argc = argc;
	int v = run_fn(ctx, &ev);
	set_verdict(act, v);
	if (v == SANDLOCK_VERDICT_ALLOW && ctx->frozen_active && !sl_policy_verify_disabled)
		keep_seen(ctx, argv, argc);
	free_argv(argv, argc);
	return true;
}

static void pol_answered(void *state, const sandlock_notif_t *n)
{
	sandlock_policy_ctx_t *ctx = state;
	sl_policy_current = NULL;
	ctx->net_seen = false;
	if (!ctx->frozen_active || ctx->frozen_id != n->id)
		return;
	/* A continued exec copies argv now: the others may run again only
	 * once the caller took the stop pending for it, i.e. its execve is
	 * over (done or failed). */
	sl_freeze_wait_stopped(ctx->frozen_tgid, (pid_t)n->pid);
	verify_exec(ctx);
	free(ctx->seen);
	ctx->seen = NULL;
	ctx->seen_len = 0;
	sl_freeze_thaw(&ctx->frozen);
	ctx->frozen_active = false;
}

/* ---------------- network (asked by netdest.c) ---------------- */

/* restrict_pid_network: the calling thread's process may reach ip. */
static bool pid_may_reach(const sandlock_policy_ctx_t *ctx, pid_t tid, const struct pol_ip *ip)
{
	if (!ctx->npidnets)
		return true;
	pid_t tgid = tgid_of(tid);
	for (size_t i = 0; i < ctx->npidnets; i++)
		if (ctx->pidnets[i].pid == tid || ctx->pidnets[i].pid == tgid)
			return sl_pol_ip_in(ctx->pidnets[i].ips, ctx->pidnets[i].n, ip);
	return true;
}

int sl_policy_net(const struct sl_call *call, const char *syscall, const struct sl_sockaddr *a,
                  int static_err)
{
	sandlock_policy_ctx_t *ctx = sl_policy_current;
	if (!ctx || !ctx->net_seen || ctx->net_id != call->n->id)
		return static_err;
	ctx->init = call->init;
	int fam = a->len >= sizeof(sa_family_t) ? a->ss.ss_family : AF_UNSPEC;
	if (fam != AF_INET && fam != AF_INET6)
		return static_err; /* unix paths: the static policy's business */
	char host[INET6_ADDRSTRLEN] = "";
	struct pol_ip ip;
	memset(&ip, 0, sizeof ip);
	ip.family = fam;
	uint16_t port;
	if (fam == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&a->ss;
		memcpy(ip.addr, &s4->sin_addr, 4);
		port = ntohs(s4->sin_port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&a->ss;
		memcpy(ip.addr, &s6->sin6_addr, 16);
		port = ntohs(s6->sin6_port);
	}
	inet_ntop(fam, ip.addr, host, sizeof host);
	sandlock_policy_event_t ev;
	memset(&ev, 0, sizeof ev);
	ev.syscall = syscall;
	ev.category = "network";
	ev.pid = (int32_t)call->n->pid;
	ev.host = host;
	ev.port = port;
	ev.denied = static_err != 0;
	int v = run_fn(ctx, &ev);
	if (v)
		return v;
	/* A restriction binds outgoing calls, not the address a server binds. */
	if (!static_err && ctx->net_restricted && strcmp(syscall, "bind") != 0 &&
	    !sl_pol_ip_in(ctx->ips, ctx->nips, &ip))
		return EACCES;
	if (!static_err && strcmp(syscall, "bind") != 0 && !pid_may_reach(ctx, call->n->pid, &ip))
		return EACCES;
	return static_err;
}

/* ---------------- deny_path on opens ---------------- */

static int32_t open_check(void *ud, const sandlock_opened_t *f)
{
	sandlock_policy_ctx_t *ctx = ud;
	int32_t e = 0;
	pthread_mutex_lock(&ctx->mu);
	for (size_t i = 0; !e && i < ctx->ndenied; i++) {
		const struct pol_denied *d = &ctx->denied[i];
		if ((f->path && sl_path_under(f->path, d->path)) ||
		    (d->ino && d->dev == f->dev && d->ino == f->ino))
			e = EACCES;
	}
	pthread_mutex_unlock(&ctx->mu);
	return e;
}

static bool decide_open(sandlock_policy_ctx_t *ctx, const struct sl_call *call,
                        sandlock_action_t *act)
{
	pthread_mutex_lock(&ctx->mu);
	bool any = ctx->ndenied > 0;
	pthread_mutex_unlock(&ctx->mu);
	if (!any)
		return false; /* nothing denied yet: the usual way */
	return sl_open_on_behalf(call, open_check, ctx, act);
}

/* ---------------- the builtin ---------------- */

static const char *fork_name(int nr)
{
	switch (nr) {
#ifdef __NR_fork
	case __NR_fork:
		return "fork";
#endif
#ifdef __NR_vfork
	case __NR_vfork:
		return "vfork";
#endif
	default:
		return "clone";
	}
}

/* restrict_max_processes: this fork would pass the tightened limit (a
 * thread is not a process; an uncountable tree fails closed). */
static bool over_max_procs(const sandlock_policy_ctx_t *ctx, const struct sl_call *call)
{
	if (!ctx->max_procs)
		return false;
	if (sl_sys_makes_thread(call->n->syscall_nr, call->n->args))
		return false;
	int count = sl_count_tree_processes(call->init);
	return count < 0 || (uint32_t)count >= ctx->max_procs;
}

static bool pol_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	sandlock_policy_ctx_t *ctx = state;
	int nr = call->n->syscall_nr;
	sl_policy_current = ctx;
	ctx->net_seen = false;
	ctx->init = call->init;
	if (sl_sys_is_exec_like(nr))
		return decide_exec(ctx, call, act);
	if (sl_sys_is_open_family(nr))
		return decide_open(ctx, call, act);
	if (nr == __NR_connect || nr == __NR_bind || nr == __NR_sendto || nr == __NR_sendmsg ||
	    nr == __NR_sendmmsg) {
		ctx->net_seen = true; /* decided by netdest with its copy */
		ctx->net_id = call->n->id;
		return false;
	}
	sandlock_policy_event_t ev;
	memset(&ev, 0, sizeof ev);
	ev.category = "process";
	ev.pid = (int32_t)call->n->pid;
	ev.syscall = nr == __NR_exit_group ? "exit_group" : fork_name(nr);
	int v = run_fn(ctx, &ev);
	if (nr == __NR_exit_group && v != SL_POLICY_KILL)
		return false; /* an exit cannot be refused */
	if (v == 0 && over_max_procs(ctx, call))
		v = EAGAIN; /* what fork says at RLIMIT_NPROC, as procs.c */
	set_verdict(act, v);
	return true;
}

/* Its events: process creation, exec, opens (syscalls.h's classes), and
 * connect, bind, exit_group. */
static const sl_sys_class k_pol_classes[] = { sl_sys_fork_like, sl_sys_exec_like,
	                                      sl_sys_open_family };
static const int k_pol_nrs[] = { __NR_connect, __NR_bind, __NR_exit_group };

static int pol_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (!cfg->policy_fn)
		return 0;
	if (sl_traps_add_classes(out, k_pol_classes, sizeof k_pol_classes / sizeof k_pol_classes[0]) < 0)
		return -1;
	/* sendto/sendmsg: netdest traps them already (with an address). */
	return sl_traps_add_all(out, k_pol_nrs, sizeof(k_pol_nrs) / sizeof(k_pol_nrs[0]));
}

static int pol_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                    char **msg)
{
	(void)sv;
	sandlock_policy_ctx_t *ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	ctx->fn = cfg->policy_fn;
	ctx->ud = cfg->policy_ud;
	pthread_mutex_init(&ctx->mu, NULL);
	*state = ctx;
	return 0;
}

static void pol_free(void *state)
{
	sandlock_policy_ctx_t *ctx = state;
	if (!ctx)
		return;
	if (ctx->frozen_active)
		sl_freeze_thaw(&ctx->frozen);
	free(ctx->seen);
	for (size_t i = 0; i < ctx->ndenied; i++)
		free(ctx->denied[i].path);
	free(ctx->denied);
	free(ctx->ips);
	for (size_t i = 0; i < ctx->npidnets; i++)
		free(ctx->pidnets[i].ips);
	free(ctx->pidnets);
	pthread_mutex_destroy(&ctx->mu);
	free(ctx);
}

const struct sl_builtin sl_builtin_policy = {
	.name = "policy_fn",
	.setting = "policy_fn (events come from the supervisor)",
	.phase = SL_PHASE_FIRST,
	.needs_opener = true,
	.syscalls = pol_syscalls,
	.init = pol_init,
	.free = pol_free,
	.decide = pol_decide,
	.answered = pol_answered,
};
