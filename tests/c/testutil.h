/*
 * testutil.h — helpers shared by the C tests.  Include after harness.h.
 *
 * Header-only: every function is `static inline` so a test file that uses
 * only some of them still builds clean under -Wall -Werror (an unused plain
 * `static` function would be a warning).  Helpers never CHECK anything
 * themselves: they report what went wrong on stderr and return a value the
 * test asserts on, so a failure points at the test's own line.
 */
#ifndef SANDLOCK_TEST_UTIL_H
#define SANDLOCK_TEST_UTIL_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandlock.h"

#define TU_PY "/usr/bin/python3"

/* ================= building and running ================= */

/* Number of entries before argv's NULL terminator. */
static inline uint32_t tu_argc(const char *const *argv)
{
	uint32_t argc = 0;
	while (argv[argc])
		argc++;
	return argc;
}

/*
 * A builder that can run the system's own programs: the usual read-only
 * system directories, those that exist on this machine (/lib64 is absent
 * on some distributions and a missing path would fail the build).
 */
static inline sandlock_builder_t *tu_system_builder(void)
{
	static const char *const dirs[] = { "/usr", "/bin", "/lib", "/lib64", "/etc" };
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (access(dirs[i], F_OK) == 0)
			sandlock_sandbox_builder_fs_read(b, dirs[i]);
	return b;
}

/* Build b (consumed).  NULL on failure, with the reason on stderr. */
static inline sandlock_sandbox_t *tu_build(sandlock_builder_t *b)
{
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb)
		fprintf(stderr, "  build failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return sb;
}

/* sandlock_run on a NULL-terminated argv.  NULL on failure, reason on stderr. */
static inline sandlock_result_t *tu_run(const sandlock_sandbox_t *sb, const char *const *argv)
{
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_run_err(sb, argv, tu_argc(argv), &err, &msg);
	if (!r)
		fprintf(stderr, "  run failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return r;
}

/* Build b (a 30 s timeout added) and run `sh -c script` (sh: the shell's
 * path, as the sandbox names it); the sandbox is freed.  NULL on failure. */
static inline sandlock_result_t *tu_run_sh(sandlock_builder_t *b, const char *sh,
                                           const char *script)
{
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { sh, "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

/* A COW run's change list as "K path\n" lines. */
static inline void tu_changes_text(const sandlock_result_t *r, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < sandlock_result_change_count(r, false); i++) {
		char k;
		const char *p = sandlock_result_change(r, false, i, &k);
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%c %s\n", k, p);
	}
}

/* sandlock_run_with_handlers on a NULL-terminated argv (takes the handlers). */
static inline sandlock_result_t *tu_run_with(const sandlock_sandbox_t *sb,
                                             const char *const *argv,
                                             const sandlock_registration_t *regs, size_t nregs)
{
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r =
		sandlock_run_with_handlers_err(sb, argv, tu_argc(argv), regs, nregs, &err, &msg);
	if (!r)
		fprintf(stderr, "  run failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return r;
}

/* ================= looking at results ================= */

/* True if the captured stdout is exactly want; otherwise shows both. */
/* True if got (a probe's output; NULL when there was none) is want;
 * otherwise shows both. */
static inline bool tu_str_is(const char *got, const char *want)
{
	bool ok = got && strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "  stdout: '%s' (want '%s')\n", got ? got : "(null)", want);
	return ok;
}

static inline bool tu_out_is(const sandlock_result_t *r, const char *want)
{
	char *s = sandlock_result_stdout(r);
	bool ok = tu_str_is(s, want);
	sandlock_string_free(s);
	return ok;
}

/* True if the captured stderr contains want; otherwise shows it. */
static inline bool tu_err_has(const sandlock_result_t *r, const char *want)
{
	char *s = sandlock_result_stderr(r);
	bool ok = s && strstr(s, want) != NULL;
	if (!ok)
		fprintf(stderr, "  stderr: '%s' (want '%s')\n", s ? s : "(null)", want);
	sandlock_string_free(s);
	return ok;
}

/* True if fd is not open in this process (e.g. a srcfd sandlock took over). */
static inline bool tu_fd_closed(int fd)
{
	errno = 0;
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

/* ================= handler building blocks ================= */

/* What a counting handler saw: callback entries and ud_free calls. */
struct tu_counter {
	atomic_int calls;
	atomic_int freed;
};

/* Handler callback (ud = struct tu_counter): count the call, let it proceed. */
static inline int32_t tu_count_and_continue(void *ud, const sandlock_notif_t *n,
                                            sandlock_mem_t *m, sandlock_action_t *out)
{
	(void)n;
	(void)m;
	atomic_fetch_add(&((struct tu_counter *)ud)->calls, 1);
	sandlock_action_set_continue(out);
	return 0;
}

/* ud_free for a struct tu_counter: counts, so tests can check "exactly once". */
static inline void tu_counter_free(void *ud)
{
	atomic_fetch_add(&((struct tu_counter *)ud)->freed, 1);
}

/* The path an openat names (heap, sandlock_string_free), or NULL for any
 * other syscall or an unreadable path.  Valid only inside a callback. */
static inline char *tu_openat_path(sandlock_mem_t *m, const sandlock_notif_t *n)
{
	if (n->syscall_nr != SYS_openat)
		return NULL;
	return sandlock_mem_read_string(m, n->args[1], 4096);
}

/* True if the call is an openat of exactly want. */
static inline bool tu_openat_path_is(sandlock_mem_t *m, const sandlock_notif_t *n,
                                     const char *want)
{
	char *p = tu_openat_path(m, n);
	bool ok = p && strcmp(p, want) == 0;
	sandlock_string_free(p);
	return ok;
}

/* ================= the escape helper ================= */

/* $SANDLOCK_BUILD/helpers (the Makefile exports SANDLOCK_BUILD; "build"
 * otherwise), made absolute: tests run guests with another cwd, where a
 * relative helper path would name nothing. */
static inline const char *tu_helpers_dir(void)
{
	static char dir[4096];
	if (!dir[0]) {
		const char *b = getenv("SANDLOCK_BUILD");
		char *abs = realpath(b ? b : "build", NULL);
		snprintf(dir, sizeof dir, "%s/helpers", abs ? abs : (b ? b : "build"));
		free(abs);
	}
	return dir;
}

/* One line from fd (without the newline), or "" at EOF. */
static inline void tu_read_line(int fd, char *buf, size_t len)
{
	size_t n = 0;
	while (n + 1 < len) {
		char c;
		ssize_t k = read(fd, &c, 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0 || c == '\n')
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
}

static inline void tu_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

/* utime + stime of pid in clock ticks (fields 14 and 15 of
 * /proc/PID/stat), or -1. */
static inline long long tu_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	                 &st) != 2)
		return -1;
	return (long long)(ut + st);
}

/* Wait (bounded: tries x 20 ms) until pid has used more CPU than before. */
static inline bool tu_cpu_advances(pid_t pid, int tries)
{
	long long t0 = tu_cpu_ticks(pid);
	for (int i = 0; i < tries && t0 >= 0; i++) {
		tu_sleep_ms(20);
		if (tu_cpu_ticks(pid) > t0)
			return true;
	}
	return false;
}

/* Run argv without any sandbox (the control of a hostile probe); its
 * first output line, in a static buffer. */
static inline const char *tu_outside_line(const char *const *argv)
{
	static char buf[256];
	buf[0] = 0;
	int p[2];
	if (pipe(p) < 0)
		return buf;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	ssize_t n, tot = 0;
	while ((n = read(p[0], buf + tot, sizeof buf - 1 - (size_t)tot)) > 0)
		tot += n;
	buf[tot] = 0;
	buf[strcspn(buf, "\n")] = 0;
	close(p[0]);
	waitpid(pid, NULL, 0);
	return buf;
}

/* The hostile probe program, tests/c/helpers/escape.c. */
static inline const char *tu_escape_path(void)
{
	static char path[4200];
	if (!path[0])
		snprintf(path, sizeof path, "%s/escape", tu_helpers_dir());
	return path;
}

/* Enough to run the (dynamically linked) escape helper and nothing more. */
static inline sandlock_builder_t *tu_escape_builder(void)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_read(b, "/usr");
	sandlock_sandbox_builder_fs_read(b, "/etc");
	sandlock_sandbox_builder_fs_read(b, tu_helpers_dir());
	return b;
}

/* ================= temporary files ================= */

#define TU_TMPDIR_LEN 64

/* Create a fresh /tmp/sandlock-<tag>-XXXXXX directory into dir. */
static inline bool tu_mkdtemp(char dir[TU_TMPDIR_LEN], const char *tag)
{
	int n = snprintf(dir, TU_TMPDIR_LEN, "/tmp/sandlock-%s-XXXXXX", tag);
	return n > 0 && n < TU_TMPDIR_LEN && mkdtemp(dir) != NULL;
}

/* Create or truncate path with exactly content. */
static inline bool tu_write_file(const char *path, const char *content)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	size_t len = strlen(content);
	bool ok = write(fd, content, len) == (ssize_t)len;
	close(fd);
	return ok;
}

/* A digest of the whole tree under dir (every entry's type, mode and
 * link target, every file's md5), heap; NULL on failure.  Equal digests:
 * the tree was left as it was. */
static inline char *tu_tree_sum(const char *dir)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd,
	         "cd '%s' && find . -printf '%%p %%y %%m %%l\\n' | LC_ALL=C sort && "
	         "find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum", dir);
	FILE *p = popen(cmd, "r");
	char *buf = p ? malloc(1 << 20) : NULL;
	size_t n = buf ? fread(buf, 1, (1 << 20) - 1, p) : 0;
	if (buf)
		buf[n] = '\0';
	if (p && pclose(p) != 0) {
		free(buf);
		buf = NULL;
	}
	return buf;
}

/* nftw callback of tu_rm_rf: with FTW_DEPTH a directory comes after its entries. */
static inline int tu_rm_entry(const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 ? 0 : -1;
}

/* Remove dir and everything below it (children first; links not followed). */
static inline void tu_rm_rf(const char *dir)
{
	if (nftw(dir, tu_rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
		fprintf(stderr, "  could not remove %s\n", dir);
}

/* ================= processes and sockets ================= */

/* A child of ours outside any sandbox that just waits to be signalled. */
static inline pid_t tu_spawn_victim(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	return pid;
}

/* Kill and reap a tu_spawn_victim child. */
static inline void tu_reap_victim(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A listening TCP socket on 127.0.0.1 (fd, or -1); *port = its port. */
static inline int tu_tcp_listener(int *port)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof a;
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0 ||
	    getsockname(s, (struct sockaddr *)&a, &len) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(a.sin_port);
	return s;
}

/* A TCP port that was free a moment ago (for bind/listen probes), or -1. */
static inline int tu_free_port(void)
{
	int port = -1;
	int s = tu_tcp_listener(&port);
	if (s >= 0)
		close(s);
	return s >= 0 ? port : -1;
}

/* The cgroup v2 directory pid is in (dir, len), or false: no v2 mount,
 * the root group, or no cgroup.freeze there. */
static inline bool tu_v2_group(pid_t pid, char *dir, size_t len)
{
	char line[1024], mnt[512] = "", rel[512] = "";
	FILE *f = fopen("/proc/self/mountinfo", "re");
	while (f && !mnt[0] && fgets(line, sizeof line, f)) {
		char *sep = strstr(line, " - cgroup2 ");
		char m[512];
		if (sep && sscanf(line, "%*s %*s %*s %*s %511s", m) == 1)
			snprintf(mnt, sizeof mnt, "%s", m);
	}
	if (f)
		fclose(f);
	snprintf(line, sizeof line, "/proc/%d/cgroup", (int)pid);
	f = fopen(line, "re");
	while (f && !rel[0] && fgets(line, sizeof line, f))
		if (strncmp(line, "0::", 3) == 0)
			snprintf(rel, sizeof rel, "%.*s", (int)strcspn(line + 3, "\n"), line + 3);
	if (f)
		fclose(f);
	if (!mnt[0] || !rel[0] || strcmp(rel, "/") == 0)
		return false;
	char path[1100];
	if ((size_t)snprintf(dir, len, "%s%s", mnt, rel) >= len ||
	    (size_t)snprintf(path, sizeof path, "%s/cgroup.freeze", dir) >= sizeof path)
		return false;
	return access(path, F_OK) == 0;
}

/* Does the v2 group dir say "frozen 1" in its cgroup.events? */
static inline bool tu_group_frozen(const char *dir)
{
	char path[1100], buf[256];
	snprintf(path, sizeof path, "%s/cgroup.events", dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	return strstr(buf, "frozen 1") != NULL;
}

/* The one-letter state of pid in /proc/PID/stat (0: gone). */
static inline char tu_proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

/* pause() took hold of pid: its v2 group is frozen, or it is stopped. */
static inline bool tu_paused(pid_t pid)
{
	char dir[1024];
	if (tu_v2_group(pid, dir, sizeof dir) && tu_group_frozen(dir))
		return true;
	return tu_proc_state(pid) == 'T';
}

#endif /* SANDLOCK_TEST_UTIL_H */
