/*
 * test_deferred.c — deferred handlers: answers from worker threads, the
 * 64-in-flight cap (EAGAIN), refusal on execve (EPERM), the deadline
 * after which a pending deferred call fails with EIO, and a "continue"
 * that resumes at the syscall's LAST builtin (connect, openat).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* Run argv with regs in a sandbox for system programs with a generous run
 * timeout and, if non-zero, this deferred deadline (NULL on failure). */
static sandlock_result_t *run_deferred(uint64_t deferred_timeout_ms, const char *const *argv,
                                       sandlock_registration_t *regs, size_t nregs)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_timeout_ms(tu_system_builder(), 60000);
	if (deferred_timeout_ms)
		sandlock_sandbox_builder_deferred_timeout_ms(b, deferred_timeout_ms);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run_with(sb, argv, regs, nregs);
	sandlock_sandbox_free(sb);
	return r;
}

/* A handler whose callback runs on a worker thread. */
static sandlock_handler_t *deferred_handler(sandlock_handler_fn fn, void *ud)
{
	sandlock_handler_t *h = sandlock_handler_new(fn, ud, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_set_deferred(h, true);
	return h;
}

static const char *const CAT_HOSTNAME[] = { "/bin/cat", "/etc/hostname", NULL };

/* ---- answers from a worker ---- */
struct wctx {
	atomic_int calls, hits, off_loop;
	pthread_t main_thread;
	enum { W_ERRNO, W_INJECT } mode; /* EXDEV, or inject "from-worker\n" */
};

static int32_t worker_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                         sandlock_action_t *out)
{
	struct wctx *c = ud;
	atomic_fetch_add(&c->calls, 1);
	if (!pthread_equal(pthread_self(), c->main_thread))
		atomic_store(&c->off_loop, 1);
	if (!tu_openat_path_is(m, n, "/etc/hostname")) {
		sandlock_action_set_continue(out);
		return 0;
	}
	atomic_fetch_add(&c->hits, 1);
	if (c->mode == W_ERRNO) {
		sandlock_action_set_errno(out, EXDEV);
		return 0;
	}
	sandlock_action_set_inject_bytes(out, (const uint8_t *)"from-worker\n", 12, 0);
	return 0;
}

TEST(deferred_errno_from_worker)
{
	struct wctx c = { .main_thread = pthread_self(), .mode = W_ERRNO };
	sandlock_registration_t regs[] = { { "openat", deferred_handler(worker_fn, &c) } };
	sandlock_result_t *r = run_deferred(0, CAT_HOSTNAME, regs, 1);
	REQUIRE(r);
	CHECK(tu_err_has(r, "Invalid cross-device link"));
	CHECK_EQ_INT(atomic_load(&c.hits), 1);
	CHECK(atomic_load(&c.off_loop));
	sandlock_result_free(r);
}

TEST(deferred_inject_from_worker)
{
	struct wctx c = { .main_thread = pthread_self(), .mode = W_INJECT };
	sandlock_registration_t regs[] = { { "openat", deferred_handler(worker_fn, &c) } };
	sandlock_result_t *r = run_deferred(0, CAT_HOSTNAME, regs, 1);
	REQUIRE(r);
	CHECK(tu_out_is(r, "from-worker\n"));
	CHECK(sandlock_result_success(r));
	sandlock_result_free(r);
}

TEST(deferral_is_terminal)
{
	/* A deferred handler that CONTINUEs ends the chain: the handler after
	 * it never sees the call. */
	struct wctx c = { .main_thread = pthread_self(), .mode = W_ERRNO };
	struct wctx later = { .main_thread = pthread_self(), .mode = W_ERRNO };
	sandlock_registration_t regs[] = {
		{ "getpid", deferred_handler(worker_fn, &c) },
		{ "getpid", sandlock_handler_new(worker_fn, &later, NULL, SANDLOCK_EXCEPTION_KILL) },
	};
	const char *argv[] = { "/bin/sh", "-c", "echo $$", NULL };
	sandlock_result_t *r = run_deferred(0, argv, regs, 2);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK(atomic_load(&c.calls) >= 1);
	CHECK_EQ_INT(atomic_load(&later.calls), 0);
	sandlock_result_free(r);
}

/* ---- refused on execve ---- */
TEST(deferred_on_execve_is_refused_with_eperm)
{
	/* Even a handler that would CONTINUE: deferral itself is refused, so
	 * the sandbox's very first execve fails (launch reports 126). */
	struct tu_counter c = { 0 };
	sandlock_registration_t regs[] = { { "execve", deferred_handler(tu_count_and_continue, &c) } };
	const char *argv[] = { "/bin/echo", "should-not-run", NULL };
	sandlock_result_t *r = run_deferred(0, argv, regs, 1);
	REQUIRE(r);
	CHECK(!sandlock_result_success(r));
	CHECK_EQ_INT(sandlock_result_exit_code(r), 126);
	CHECK(tu_out_is(r, ""));
	CHECK_EQ_INT(atomic_load(&c.calls), 0);
	sandlock_result_free(r);
}

/* ---- the 64-in-flight cap ---- */
struct capctx {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool released;
	int blocked, max_blocked;
};

/* Sync, first in the chain: the child's "/sl-release" open releases the
 * blocked deferred calls.  Answered here, so it never needs a slot. */
static int32_t release_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                          sandlock_action_t *out)
{
	struct capctx *c = ud;
	if (tu_openat_path_is(m, n, "/sl-release")) {
		pthread_mutex_lock(&c->mu);
		c->released = true;
		pthread_cond_broadcast(&c->cv);
		pthread_mutex_unlock(&c->mu);
		sandlock_action_set_errno(out, ENOENT);
		return 0;
	}
	sandlock_action_set_continue(out);
	return 0;
}

static int32_t blocking_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                           sandlock_action_t *out)
{
	struct capctx *c = ud;
	char *p = tu_openat_path(m, n);
	bool target = p && strncmp(p, "/sl-defer/", 10) == 0;
	sandlock_string_free(p);
	if (!target) {
		sandlock_action_set_continue(out);
		return 0;
	}
	pthread_mutex_lock(&c->mu);
	c->blocked++;
	if (c->blocked > c->max_blocked)
		c->max_blocked = c->blocked;
	while (!c->released)
		pthread_cond_wait(&c->cv, &c->mu);
	c->blocked--;
	pthread_mutex_unlock(&c->mu);
	sandlock_action_set_errno(out, EXDEV);
	return 0;
}

TEST(at_most_64_deferred_calls_in_flight)
{
	/* 70 threads open distinct paths; each deferred call blocks until the
	 * child opens /sl-release, which it does once 6 threads have their
	 * answer -- those 6 can only be the EAGAIN refusals.  (The 30 s
	 * fallback only exists so a broken cap fails instead of hanging.) */
	struct capctx c = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	sandlock_registration_t regs[] = {
		{ "openat", sandlock_handler_new(release_fn, &c, NULL, SANDLOCK_EXCEPTION_KILL) },
		{ "openat", deferred_handler(blocking_fn, &c) },
	};
	const char *argv[] = {
		TU_PY, "-c",
		"import os,errno,threading,time\n"
		"N=70; res=[None]*N; done=[0]; lk=threading.Lock()\n"
		"def w(i):\n"
		"    try:\n"
		"        os.open('/sl-defer/%d' % i, os.O_RDONLY); r='ok'\n"
		"    except OSError as e: r=e.errno\n"
		"    res[i]=r\n"
		"    with lk: done[0]+=1\n"
		"ts=[threading.Thread(target=w,args=(i,)) for i in range(N)]\n"
		"for t in ts: t.start()\n"
		"end=time.monotonic()+30\n"
		"while done[0] < N-64 and time.monotonic() < end: time.sleep(0.005)\n"
		"try: os.open('/sl-release', os.O_RDONLY)\n"
		"except OSError: pass\n"
		"for t in ts: t.join()\n"
		"print(res.count(errno.EAGAIN), res.count(errno.EXDEV))\n",
		NULL
	};
	sandlock_result_t *r = run_deferred(0, argv, regs, 2);
	REQUIRE(r);
	CHECK(tu_out_is(r, "6 64\n"));
	CHECK_EQ_INT(c.max_blocked, 64);
	sandlock_result_free(r);
}

/* ---- the deadline ---- */
struct latectx {
	atomic_int hits, answered_before_return, late_fd;
};

/* Blocks until the supervisor has answered the call (its notification is
 * no longer pending, so reading the child's memory fails), then returns
 * an inject whose fd must be dropped. */
static int32_t late_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                       sandlock_action_t *out)
{
	struct latectx *c = ud;
	if (!tu_openat_path_is(m, n, "/etc/hostname")) {
		sandlock_action_set_continue(out);
		return 0;
	}
	atomic_fetch_add(&c->hits, 1);
	char b;
	for (int i = 0; i < 30000; i++) { /* bounded: a broken deadline fails, not hangs */
		if (sandlock_mem_peek(m, n->args[1], &b, 1) != 0) {
			atomic_store(&c->answered_before_return, 1);
			break;
		}
		usleep(1000);
	}
	sandlock_action_set_inject_bytes(out, (const uint8_t *)"late\n", 5, 0);
	atomic_store(&c->late_fd, out->u.inject.srcfd);
	return 0;
}

TEST(deferred_call_past_deadline_fails_with_eio)
{
	struct latectx c = { .late_fd = -1 };
	sandlock_registration_t regs[] = { { "openat", deferred_handler(late_fn, &c) } };
	sandlock_result_t *r = run_deferred(100, CAT_HOSTNAME, regs, 1);
	REQUIRE(r);
	CHECK(tu_err_has(r, "Input/output error"));
	CHECK(!sandlock_result_success(r));
	CHECK_EQ_INT(atomic_load(&c.hits), 1);
	CHECK(atomic_load(&c.answered_before_return));
	int fd = atomic_load(&c.late_fd);
	CHECK(fd >= 0);
	CHECK(tu_fd_closed(fd)); /* dropped result: fd closed */
	sandlock_result_free(r);
}

/* ---- a CONTINUE resumes at the syscall's LAST builtin (issue 25) ---- */
struct connect_seen {
	atomic_int performed, continued;
};

static void log_connects(void *ud, const sandlock_decision_t *d)
{
	struct connect_seen *l = ud;
	if (d->notif->syscall_nr != __NR_connect)
		return;
	if (d->action->kind == SANDLOCK_ACTION_CONTINUE)
		atomic_fetch_add(&l->continued, 1);
	else if (d->decided_by && strcmp(d->decided_by, "socket destinations") == 0)
		atomic_fetch_add(&l->performed, 1);
}

/*
 * A python guest connects from a thread to 127.0.0.1 and 127.0.0.2 on a
 * port listening on 127.0.0.1, which the rule grants; h (deferred) is on
 * connect.  Its output: a line per try, "ok" or the errno.
 */
static sandlock_result_t *threaded_connects(sandlock_handler_t *h, struct connect_seen *seen)
{
	int port = 0;
	int ls = tu_tcp_listener(&port);
	if (ls < 0)
		return NULL;
	char spec[64], code[512];
	snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", port);
	snprintf(code, sizeof code,
	         "import socket, threading\n"
	         "def go(host):\n"
	         "    s = socket.socket()\n"
	         "    try:\n"
	         "        s.connect((host, %d)); print('ok', flush=True)\n"
	         "    except OSError as e:\n"
	         "        print(e.errno, flush=True)\n"
	         "for h in ('127.0.0.1', '127.0.0.2'):\n"
	         "    t = threading.Thread(target=go, args=(h,)); t.start(); t.join()\n",
	         port);
	sandlock_registration_t regs[] = { { "connect", h } };
	sandlock_builder_t *b = sandlock_sandbox_builder_net_allow_spec(tu_system_builder(), spec);
	b = sandlock_sandbox_builder_on_decision(b, log_connects, seen);
	sandlock_sandbox_t *sb = tu_build(b);
	const char *const argv[] = { TU_PY, "-c", code, NULL };
	sandlock_result_t *r = sb ? tu_run_with(sb, argv, regs, 1) : NULL;
	sandlock_sandbox_free(sb);
	close(ls);
	return r;
}

/*
 * An async handler on connect (a thread of the guest connecting, as a
 * threaded client does): its "continue" goes on to the destination rules,
 * which perform the call.  The rule names 127.0.0.1 only; a continued
 * connect to 127.0.0.2 would meet the kernel (ECONNREFUSED: nothing
 * listens there), the rules refuse it (EACCES).
 */
TEST(deferred_continue_on_connect_resumes_at_the_destination_rules)
{
	struct connect_seen seen = { 0, 0 };
	struct tu_counter c = { 0, 0 };
	sandlock_result_t *r = threaded_connects(deferred_handler(tu_count_and_continue, &c), &seen);
	REQUIRE(r);
	char want[32];
	snprintf(want, sizeof want, "ok\n%d\n", EACCES);
	CHECK(tu_out_is(r, want));
	CHECK(atomic_load(&c.calls) >= 2);
	CHECK(atomic_load(&seen.performed) >= 2 && atomic_load(&seen.continued) == 0);
	sandlock_result_free(r);
}

/* An async deny on connect still wins over the rules' allow. */
static int32_t deny_exdev(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                          sandlock_action_t *out)
{
	(void)ud, (void)n, (void)m;
	sandlock_action_set_errno(out, EXDEV);
	return 0;
}

TEST(deferred_deny_on_connect_is_answered)
{
	struct connect_seen seen = { 0, 0 };
	sandlock_result_t *r = threaded_connects(deferred_handler(deny_exdev, NULL), &seen);
	REQUIRE(r);
	char want[16];
	snprintf(want, sizeof want, "%d\n%d\n", EXDEV, EXDEV);
	CHECK(tu_out_is(r, want));
	CHECK_EQ_INT(atomic_load(&seen.performed), 0);
	sandlock_result_free(r);
}

/*
 * An async handler on openat with /proc readable: its "continue" goes on
 * to the /proc policy, which opens on behalf and hides processes outside
 * the sandbox (Landlock alone would let /proc/PID of a host process be
 * read: shown outside first).
 */
TEST(deferred_continue_on_openat_resumes_at_the_proc_policy)
{
	pid_t victim = tu_spawn_victim();
	REQUIRE(victim > 0);
	char p[64], script[256];
	snprintf(p, sizeof p, "/proc/%d/cmdline", (int)victim);
	int fd = open(p, O_RDONLY); /* control: visible from outside */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(script, sizeof script,
	         "cat %s >/dev/null 2>&1 && echo saw || echo hidden; "
	         "head -1 /proc/self/status", p);
	struct tu_counter c = { 0, 0 };
	sandlock_registration_t regs[] = { { "openat", deferred_handler(tu_count_and_continue, &c) } };
	sandlock_sandbox_t *sb =
	    tu_build(sandlock_sandbox_builder_fs_read(tu_system_builder(), "/proc"));
	REQUIRE(sb);
	const char *const argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 1);
	sandlock_sandbox_free(sb);
	tu_reap_victim(victim);
	REQUIRE(r);
	CHECK(tu_out_is(r, "hidden\nName:\thead\n"));
	CHECK(atomic_load(&c.calls) >= 2);
	sandlock_result_free(r);
}
