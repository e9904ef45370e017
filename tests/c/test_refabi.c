/*
 * test_refabi.c — a program written against the reference's C header
 * uses libsandlock unchanged (issue 25).
 *
 * Every function whose name is also in the reference header is taken
 * here through a pointer of exactly the type that header gives it (with
 * its type names: sandlock_exit_reason, sandlock_notif_data_t,
 * sandlock_action_out_t, ...).  Built with -Werror, a signature that
 * drifts from the reference's no longer compiles.  The tests below then
 * check the calls mean what the reference says: a per-run name, handler
 * registrations by syscall number, the reference's exit reasons and
 * signal numbers, wait with a timeout that kills, spec-taking network
 * rules, confine without error out-parameters.
 */
#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#include "harness.h"
#include "sandlock.h"
#include "testutil.h"

/* The reference's declaration of NAME, as a pointer type; taking NAME's
 * address into it fails to compile (-Werror) if the types differ. */
#define TYPED(ret, name, params)                                               \
	ret(*volatile p_##name) params = name;                                 \
	(void)p_##name;

static int64_t now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

static void take_every_shared_function(void)
{
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_new, (void))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_read, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_write, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_deny, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_storage, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_workdir, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_cwd, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_chroot, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_mount, (sandlock_builder_t *, const char *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_fs_mount_ro, (sandlock_builder_t *, const char *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_on_exit, (sandlock_builder_t *, uint8_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_on_error, (sandlock_builder_t *, uint8_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_max_memory, (sandlock_builder_t *, uint64_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_max_disk, (sandlock_builder_t *, uint64_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_max_processes, (sandlock_builder_t *, uint32_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_max_cpu, (sandlock_builder_t *, uint8_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_num_cpus, (sandlock_builder_t *, uint32_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_net_allow, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_net_deny, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_net_allow_bind, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_net_deny_bind, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_port_remap, (sandlock_builder_t *, bool))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_random_seed, (sandlock_builder_t *, uint64_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_clean_env, (sandlock_builder_t *, bool))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_env_var, (sandlock_builder_t *, const char *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_extra_deny_syscalls, (sandlock_builder_t *, const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_extra_allow_syscalls, (sandlock_builder_t *, const char *))
	TYPED(int64_t, sandlock_syscall_nr, (const char *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_max_open_files, (sandlock_builder_t *, unsigned int))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_no_randomize_memory, (sandlock_builder_t *, bool))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_no_huge_pages, (sandlock_builder_t *, bool))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_no_coredump, (sandlock_builder_t *, bool))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_deterministic_dirs, (sandlock_builder_t *, bool))
	TYPED(uint32_t, sandlock_protection_min_abi, (uint32_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_allow_degraded, (sandlock_builder_t *, uint32_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_disable, (sandlock_builder_t *, uint32_t))
	TYPED(sandlock_sandbox_t *, sandlock_sandbox_build, (sandlock_builder_t *, int *, char * *))
	TYPED(void, sandlock_sandbox_free, (sandlock_sandbox_t *))
	TYPED(int, sandlock_confine, (const sandlock_sandbox_t *))
	TYPED(sandlock_result_t *, sandlock_run, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(int32_t, sandlock_handle_pid, (const sandlock_handle_t *))
	TYPED(int, sandlock_handle_kill, (sandlock_handle_t *))
	TYPED(sandlock_result_t *, sandlock_handle_wait, (sandlock_handle_t *))
	TYPED(sandlock_result_t *, sandlock_handle_wait_timeout, (sandlock_handle_t *, uint64_t))
	TYPED(void, sandlock_handle_free, (sandlock_handle_t *))
	TYPED(int, sandlock_result_exit_code, (const sandlock_result_t *))
	TYPED(sandlock_exit_reason, sandlock_result_reason, (const sandlock_result_t *))
	TYPED(int, sandlock_result_signal, (const sandlock_result_t *))
	TYPED(bool, sandlock_result_success, (const sandlock_result_t *))
	TYPED(char *, sandlock_result_stdout, (const sandlock_result_t *))
	TYPED(char *, sandlock_result_stderr, (const sandlock_result_t *))
	TYPED(const uint8_t *, sandlock_result_stdout_bytes, (const sandlock_result_t *, uintptr_t *))
	TYPED(const uint8_t *, sandlock_result_stderr_bytes, (const sandlock_result_t *, uintptr_t *))
	TYPED(void, sandlock_result_free, (sandlock_result_t *))
	TYPED(void, sandlock_string_free, (char *))
	TYPED(int, sandlock_landlock_abi_version, (void))
	TYPED(int, sandlock_min_landlock_abi, (void))
	TYPED(void, sandlock_action_set_continue, (sandlock_action_out_t *))
	TYPED(void, sandlock_action_set_errno, (sandlock_action_out_t *, int32_t))
	TYPED(void, sandlock_action_set_return_value, (sandlock_action_out_t *, int64_t))
	TYPED(void, sandlock_action_set_inject_fd_send, (sandlock_action_out_t *, int, uint32_t))
	TYPED(void, sandlock_action_set_inject_bytes, (sandlock_action_out_t *, const uint8_t *, uintptr_t, uint32_t))
	TYPED(void, sandlock_action_set_hold, (sandlock_action_out_t *))
	TYPED(void, sandlock_action_set_kill, (sandlock_action_out_t *, int32_t, int32_t))
	TYPED(sandlock_handler_t *, sandlock_handler_new, (int32_t (*)(void *, const sandlock_notif_data_t *, sandlock_mem_handle_t *, sandlock_action_out_t *), void *, void (*)(void *), uint32_t))
	TYPED(void, sandlock_handler_set_deferred, (sandlock_handler_t *, bool))
	TYPED(void, sandlock_handler_free, (sandlock_handler_t *))
	TYPED(sandlock_result_t *, sandlock_run_with_handlers, (const sandlock_sandbox_t *, const char *, const char *const *, uint32_t, const sandlock_handler_registration_t *, uintptr_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_policy_fn, (sandlock_builder_t *, sandlock_policy_fn_t, void *, void (*)(void *)))
	TYPED(void, sandlock_ctx_restrict_network, (sandlock_ctx_t *, const char *const *, uint32_t))
	TYPED(void, sandlock_ctx_grant_network, (sandlock_ctx_t *, const char *const *, uint32_t))
	TYPED(void, sandlock_ctx_restrict_max_memory, (sandlock_ctx_t *, uint64_t))
	TYPED(void, sandlock_ctx_restrict_max_processes, (sandlock_ctx_t *, uint32_t))
	TYPED(void, sandlock_ctx_restrict_pid_network, (sandlock_ctx_t *, uint32_t, const char *const *, uint32_t))
	TYPED(void, sandlock_ctx_deny_path, (sandlock_ctx_t *, const char *))
	TYPED(void, sandlock_ctx_allow_path, (sandlock_ctx_t *, const char *))
	TYPED(int32_t, sandlock_mem_read_cstr, (const sandlock_mem_handle_t *, uint64_t, uint8_t *, uintptr_t, uintptr_t *))
	TYPED(int32_t, sandlock_mem_read, (const sandlock_mem_handle_t *, uint64_t, uint8_t *, uintptr_t, uintptr_t *))
	TYPED(int32_t, sandlock_mem_write, (const sandlock_mem_handle_t *, uint64_t, const uint8_t *, uintptr_t))
	TYPED(sandlock_t *, sandlock_new_with_fns, (const sandlock_sandbox_t *, const char *, sandlock_init_fn_t, sandlock_work_fn_t))
	TYPED(sandlock_fork_result_t *, sandlock_fork, (sandlock_t *, uint32_t))
	TYPED(uint32_t, sandlock_fork_result_count, (const sandlock_fork_result_t *))
	TYPED(int32_t, sandlock_fork_result_pid, (const sandlock_fork_result_t *, uint32_t))
	TYPED(sandlock_result_t *, sandlock_reduce, (sandlock_fork_result_t *, const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(void, sandlock_fork_result_free, (sandlock_fork_result_t *))
	TYPED(int, sandlock_wait, (sandlock_t *))
	TYPED(void, sandlock_sandbox_fns_free, (sandlock_t *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_gpu_devices, (sandlock_builder_t *, const uint32_t *, uint32_t))
	TYPED(sandlock_pipeline_t *, sandlock_pipeline_new, (void))
	TYPED(void, sandlock_pipeline_add_stage, (sandlock_pipeline_t *, const sandlock_sandbox_t *, const char *const *, unsigned int))
	TYPED(sandlock_result_t *, sandlock_pipeline_run, (sandlock_pipeline_t *, uint64_t))
	TYPED(void, sandlock_pipeline_free, (sandlock_pipeline_t *))
	TYPED(sandlock_gather_t *, sandlock_gather_new, (void))
	TYPED(void, sandlock_gather_add_source, (sandlock_gather_t *, const char *, const sandlock_sandbox_t *, const char *const *, unsigned int))
	TYPED(void, sandlock_gather_set_consumer, (sandlock_gather_t *, const sandlock_sandbox_t *, const char *const *, unsigned int))
	TYPED(sandlock_result_t *, sandlock_gather_run, (sandlock_gather_t *, uint64_t))
	TYPED(void, sandlock_gather_free, (sandlock_gather_t *))
	TYPED(sandlock_handle_t *, sandlock_create, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(sandlock_handle_t *, sandlock_create_for_run, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(int, sandlock_start, (sandlock_handle_t *))
	TYPED(sandlock_handle_t *, sandlock_popen, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int, uint32_t, uint32_t, uint32_t, int *, int *, int *))
	TYPED(int, sandlock_run_interactive, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(char *, sandlock_handle_port_mappings, (const sandlock_handle_t *))
	TYPED(sandlock_dry_run_result_t *, sandlock_dry_run, (const sandlock_sandbox_t *, const char *, const char *const *, unsigned int))
	TYPED(int, sandlock_dry_run_result_exit_code, (const sandlock_dry_run_result_t *))
	TYPED(sandlock_exit_reason, sandlock_dry_run_result_reason, (const sandlock_dry_run_result_t *))
	TYPED(int, sandlock_dry_run_result_signal, (const sandlock_dry_run_result_t *))
	TYPED(bool, sandlock_dry_run_result_success, (const sandlock_dry_run_result_t *))
	TYPED(const uint8_t *, sandlock_dry_run_result_stdout_bytes, (const sandlock_dry_run_result_t *, uintptr_t *))
	TYPED(const uint8_t *, sandlock_dry_run_result_stderr_bytes, (const sandlock_dry_run_result_t *, uintptr_t *))
	TYPED(uintptr_t, sandlock_dry_run_result_changes_len, (const sandlock_dry_run_result_t *))
	TYPED(char, sandlock_dry_run_result_change_kind, (const sandlock_dry_run_result_t *, uintptr_t))
	TYPED(char *, sandlock_dry_run_result_change_path, (const sandlock_dry_run_result_t *, uintptr_t))
	TYPED(void, sandlock_dry_run_result_free, (sandlock_dry_run_result_t *))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_cpu_cores, (sandlock_builder_t *, const uint32_t *, uint32_t))
	TYPED(sandlock_builder_t *, sandlock_sandbox_builder_time_start, (sandlock_builder_t *, uint64_t))
	TYPED(sandlock_result_t *, sandlock_run_interactive_with_handlers, (const sandlock_sandbox_t *, const char *, const char *const *, uint32_t, const sandlock_handler_registration_t *, uintptr_t))
	/* Keep the compiler from dropping the table. */
	CHECK(p_sandlock_run != NULL && p_sandlock_handler_new != NULL);
}

TEST(every_shared_function_has_the_references_type)
{
	take_every_shared_function();
}

static sandlock_sandbox_t *policy(void)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	static const char *const ro[] = { "/usr", "/lib", "/lib64", "/bin", "/etc", "/proc" };
	for (size_t i = 0; i < sizeof ro / sizeof ro[0]; i++)
		if (access(ro[i], F_OK) == 0)
			b = sandlock_sandbox_builder_fs_read(b, ro[i]);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb)
		fprintf(stderr, "  build: %s\n", msg ? msg : "?");
	sandlock_string_free(msg);
	return sb;
}

static sandlock_result_t *sh(const sandlock_sandbox_t *sb, const char *name, const char *script)
{
	const char *const argv[] = { "/bin/sh", "-c", script, NULL };
	return sandlock_run(sb, name, argv, 3);
}

static bool out_is(const sandlock_result_t *r, const char *want)
{
	uintptr_t n = 0;
	const uint8_t *p = sandlock_result_stdout_bytes(r, &n);
	bool ok = p && n == strlen(want) && memcmp(p, want, n) == 0;
	if (!ok)
		fprintf(stderr, "  stdout: %.*s (want %s)\n", (int)n, p ? (const char *)p : "", want);
	return ok;
}

TEST(run_takes_a_name_for_this_run)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	sandlock_result_t *r = sh(sb, "refabi-box", "uname -n");
	REQUIRE(r);
	CHECK(sandlock_result_success(r) && out_is(r, "refabi-box\n"));
	sandlock_result_free(r);
	r = sh(sb, NULL, "uname -n"); /* NULL: the policy's own (auto) name */
	REQUIRE(r);
	uintptr_t n = 0;
	const uint8_t *o = sandlock_result_stdout_bytes(r, &n);
	CHECK(sandlock_result_success(r) && o && n > 8 && memcmp(o, "sandbox-", 8) == 0);
	sandlock_result_free(r);
	char longname[80];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	CHECK(sh(sb, longname, "true") == NULL); /* 64 bytes at most */
	sandlock_sandbox_free(sb);
}

TEST(exit_reasons_and_signals_are_the_references)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	sandlock_result_t *r = sh(sb, NULL, "exit 3");
	REQUIRE(r);
	sandlock_exit_reason why = sandlock_result_reason(r);
	CHECK_EQ_INT(why, SANDLOCK_EXIT_REASON_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 3);
	CHECK_EQ_INT(sandlock_result_signal(r), -1);
	/* ours says "no signal" with the same -1 (--json and Python too) */
	CHECK_EQ_INT(sandlock_result_term_signal(r), -1);
	CHECK_EQ_INT(sandlock_result_term_signal(NULL), -1);
	sandlock_result_free(r);
	/* any SIGKILL is KILLED, with no signal number */
	r = sh(sb, NULL, "kill -KILL $$");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_REASON_KILLED);
	CHECK_EQ_INT(sandlock_result_signal(r), -1);
	CHECK(!sandlock_result_success(r));
	sandlock_result_free(r);
	r = sh(sb, NULL, "kill -TERM $$");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_REASON_SIGNALED);
	CHECK_EQ_INT(sandlock_result_signal(r), SIGTERM);
	sandlock_result_free(r);
	/* a NULL result reads as KILLED */
	CHECK_EQ_INT(sandlock_result_reason(NULL), SANDLOCK_EXIT_REASON_KILLED);
	CHECK_EQ_INT(sandlock_result_signal(NULL), -1);
	sandlock_sandbox_free(sb);
}

static int32_t answer_42(void *ud, const sandlock_notif_data_t *notif, sandlock_mem_handle_t *mem,
                         sandlock_action_out_t *out)
{
	(void)mem;
	(void)notif;
	*(int *)ud += 1; /* the handler's state (a shared page: the run forks) */
	sandlock_action_set_return_value(out, 42);
	return 0;
}

TEST(handlers_are_registered_by_syscall_number)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	int nr = seccomp_syscall_resolve_name("getppid");
	REQUIRE(nr >= 0);
	int calls = 0;
	sandlock_handler_t *h = sandlock_handler_new(answer_42, &calls, NULL,
	                                             SANDLOCK_EXCEPTION_KILL);
	REQUIRE(h);
	sandlock_handler_registration_t regs[] = { { nr, h } };
	const char *const argv[] = { "/bin/sh", "-c", "echo $PPID", NULL };
	sandlock_result_t *r = sandlock_run_with_handlers(sb, "refabi-h", argv, 3, regs, 1);
	REQUIRE(r);
	CHECK(out_is(r, "42\n"));
	sandlock_result_free(r);
	/* an unknown number is refused, and the handler is still released */
	h = sandlock_handler_new(answer_42, &calls, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_registration_t bad[] = { { 1 << 20, h } };
	CHECK(sandlock_run_with_handlers(sb, NULL, argv, 3, bad, 1) == NULL);
	/* the interactive variant: the same handlers, the caller's stdout */
	int p[2];
	REQUIRE(pipe(p) == 0);
	fflush(stdout);
	int saved = dup(1);
	dup2(p[1], 1);
	h = sandlock_handler_new(answer_42, &calls, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_registration_t again[] = { { nr, h } };
	r = sandlock_run_interactive_with_handlers(sb, NULL, argv, 3, again, 1);
	dup2(saved, 1);
	close(saved);
	close(p[1]);
	REQUIRE(r);
	uintptr_t captured = 1;
	(void)sandlock_result_stdout_bytes(r, &captured);
	CHECK(sandlock_result_success(r) && captured == 0); /* nothing captured */
	char line[16] = "";
	tu_read_line(p[0], line, sizeof line);
	CHECK(tu_str_is(line, "42"));
	close(p[0]);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(wait_timeout_kills_and_reports_timeout)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	const char *const argv[] = { "/bin/sleep", "30", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 2, NULL, 0, NULL, &err, &msg);
	REQUIRE(h);
	int32_t pid = sandlock_handle_pid(h);
	CHECK(pid > 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	sandlock_result_t *r = sandlock_handle_wait_timeout(h, 200);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_REASON_TIMEOUT);
	CHECK(!sandlock_result_success(r));
	CHECK(t1.tv_sec - t0.tv_sec < 10);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH); /* nothing left running */
	sandlock_result_free(r);
	sandlock_handle_free(h);
	/* sandlock_handle_wait: until the end */
	const char *const quick[] = { "/bin/true", NULL };
	h = sandlock_spawn(sb, quick, 1, NULL, 0, NULL, &err, &msg);
	REQUIRE(h);
	r = sandlock_handle_wait(h);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK(sandlock_handle_wait(h) == NULL); /* taken once */
	sandlock_result_free(r);
	sandlock_handle_free(h);
	CHECK_EQ_INT(sandlock_handle_pid(NULL), 0);
	sandlock_sandbox_free(sb);
}

TEST(network_rules_are_specs_and_enums_have_both_spellings)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	b = sandlock_sandbox_builder_net_allow(b, "tcp://127.0.0.1:8080,8081");
	b = sandlock_sandbox_builder_net_allow_bind(b, "9000-9001,9005");
	b = sandlock_sandbox_builder_on_exit(b, (uint8_t)1);
	b = sandlock_sandbox_builder_max_cpu(b, (uint8_t)50);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
	b = sandlock_sandbox_builder_net_allow(sandlock_sandbox_builder_new(), "tcp://[::1");
	CHECK(sandlock_sandbox_build(b, &err, &msg) == NULL);
	CHECK(msg && strstr(msg, "net_allow"));
	sandlock_string_free(msg);
	CHECK_EQ_INT(sandlock_protection_min_abi(1000), 0);
	CHECK_EQ_INT(SANDLOCK_EXIT_REASON_TIMEOUT, SANDLOCK_EXIT_TIMEOUT);
}

TEST(confine_takes_only_the_policy)
{
	/* the probe works outside the sandbox first */
	int fd = open("/etc/hostname", O_RDONLY);
	if (fd < 0) {
		SKIP("no /etc/hostname to probe");
	}
	close(fd);
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "/usr");
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	REQUIRE(sb);
	pid_t pid = fork();
	if (pid == 0) {
		if (sandlock_confine(sb) != 0)
			_exit(2);
		int f = open("/etc/hostname", O_RDONLY);
		_exit(f < 0 && errno == EACCES ? 0 : 3);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ_INT(sandlock_confine(NULL), -1);
	sandlock_sandbox_free(sb);
}



/* ---------------- policy_fn and its context, the reference's way ---------------- */

struct pol {
	int drops;     /* user_data_drop calls (a shared page: see below) */
	int saw_exec;  /* an execve event with category 2 (process) */
	uint32_t procs; /* restrict_max_processes on the first exec, if set */
	uint64_t mem;   /* restrict_max_memory on the first exec, if set */
	const char *pid_ip; /* restrict_pid_network(the exec's pid, {ip}) */
};

static int32_t ref_policy(const sandlock_event_t *ev, sandlock_ctx_t *ctx, void *ud)
{
	struct pol *p = ud;
	if (ev->category == 2 && strcmp(ev->syscall, "execve") == 0 && !p->saw_exec++) {
		if (p->procs)
			sandlock_ctx_restrict_max_processes(ctx, p->procs);
		if (p->mem)
			sandlock_ctx_restrict_max_memory(ctx, p->mem);
		if (p->pid_ip)
			sandlock_ctx_restrict_pid_network(ctx, ev->pid, &p->pid_ip, 1);
	}
	return 0;
}

static void ref_drop(void *ud)
{
	((struct pol *)ud)->drops++;
}

/* The supervisor calls the policy in this process, so p can be ordinary
 * memory; a python guest prints what it could do. */
static sandlock_result_t *py_under_policy(struct pol *p, const char *net, const char *code)
{
	sandlock_builder_t *b = tu_system_builder();
	if (net)
		b = sandlock_sandbox_builder_net_allow(b, net);
	b = sandlock_sandbox_builder_policy_fn(b, ref_policy, p, ref_drop);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb) {
		fprintf(stderr, "  build: %s\n", msg ? msg : "?");
		sandlock_string_free(msg);
		return NULL;
	}
	const char *const argv[] = { TU_PY, "-c", code, NULL };
	sandlock_result_t *r = sandlock_run(sb, NULL, argv, 3);
	CHECK_EQ_INT(p->drops, 0);
	sandlock_sandbox_free(sb);
	CHECK_EQ_INT(p->drops, 1); /* dropped once, with the sandbox */
	return r;
}

#define PY_FORK3                                                                       \
	"import os, time\n"                                                            \
	"n = 0\n"                                                                      \
	"for i in range(3):\n"                                                         \
	"    try:\n"                                                                   \
	"        pid = os.fork()\n"                                                    \
	"    except OSError:\n"                                                        \
	"        continue\n"                                                           \
	"    if pid == 0:\n"                                                           \
	"        time.sleep(0.5); os._exit(0)\n"                                        \
	"    n += 1\n"                                                                 \
	"print(n, flush=True)\n"

TEST(ctx_restrict_max_processes_tightens_forks)
{
	struct pol free_run = { 0 };
	sandlock_result_t *r = py_under_policy(&free_run, NULL, PY_FORK3);
	REQUIRE(r);
	CHECK(free_run.saw_exec && tu_out_is(r, "3\n")); /* the probe forks freely */
	sandlock_result_free(r);
	struct pol tight = { .procs = 2 };
	r = py_under_policy(&tight, NULL, PY_FORK3);
	REQUIRE(r);
	CHECK(tu_out_is(r, "1\n")); /* python + one child: the other forks fail */
	sandlock_result_free(r);
}

#define PY_ALLOC "a = bytearray(400 << 20)\nfor i in range(0, len(a), 4096): a[i] = 1\nprint('ok')\n"

TEST(ctx_restrict_max_memory_tightens_the_budget)
{
	struct pol free_run = { 0 };
	sandlock_result_t *r = py_under_policy(&free_run, NULL, PY_ALLOC);
	REQUIRE(r);
	CHECK(tu_out_is(r, "ok\n")); /* 400 MiB is fine without the restriction */
	sandlock_result_free(r);
	struct pol tight = { .mem = 128ull << 20 };
	r = py_under_policy(&tight, NULL, PY_ALLOC);
	REQUIRE(r);
	CHECK(!sandlock_result_success(r)); /* OOM-killed or MemoryError */
	uintptr_t n = 0;
	const uint8_t *o = sandlock_result_stdout_bytes(r, &n);
	CHECK(!(o && n >= 2 && memcmp(o, "ok", 2) == 0));
	sandlock_result_free(r);
}

TEST(ctx_restrict_pid_network_limits_one_process)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(s >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	REQUIRE(bind(s, (struct sockaddr *)&a, sizeof a) == 0 && listen(s, 8) == 0);
	socklen_t alen = sizeof a;
	REQUIRE(getsockname(s, (struct sockaddr *)&a, &alen) == 0);
	int port = ntohs(a.sin_port);
	char net[64], code[256];
	snprintf(net, sizeof net, "tcp://127.0.0.1:%d", port);
	snprintf(code, sizeof code,
	         "import socket\ns = socket.socket()\ns.settimeout(5)\n"
	         "print(s.connect_ex(('127.0.0.1', %d)))\n", port);
	struct pol free_run = { 0 };
	sandlock_result_t *r = py_under_policy(&free_run, net, code);
	REQUIRE(r);
	CHECK(tu_out_is(r, "0\n")); /* the rule lets it through */
	sandlock_result_free(r);
	struct pol tight = { .pid_ip = "127.0.0.2" };
	r = py_under_policy(&tight, net, code);
	REQUIRE(r);
	CHECK(tu_out_is(r, "13\n")); /* EACCES: this process may reach 127.0.0.2 only */
	sandlock_result_free(r);
	close(s);
}

/* ---------------- child memory through the reference's accessors ---------------- */

struct memctx {
	int short_fails; /* read_cstr with a too small buffer refused */
	int raw_ok;      /* mem_read of the path's first bytes matched */
};

/* openat: refuse /etc/hostname, read the path both ways. */
static int32_t deny_hostname(void *ud, const sandlock_notif_data_t *n, sandlock_mem_handle_t *mem,
                             sandlock_action_out_t *out)
{
	struct memctx *c = ud;
	uint8_t path[256], tiny[4], raw[5];
	uintptr_t len = 0;
	if (sandlock_mem_read_cstr(mem, n->args[1], tiny, sizeof tiny, &len) != 0)
		c->short_fails++;
	if (sandlock_mem_read_cstr(mem, n->args[1], path, sizeof path, &len) != 0) {
		sandlock_action_set_errno(out, EIO);
		return 0;
	}
	if (sandlock_mem_read(mem, n->args[1], raw, sizeof raw, &len) == 0 && len == sizeof raw &&
	    memcmp(raw, path, sizeof raw) == 0)
		c->raw_ok++;
	if (strcmp((const char *)path, "/etc/hostname") == 0)
		sandlock_action_set_errno(out, EACCES);
	else
		sandlock_action_set_continue(out);
	return 0;
}

/* getcwd: write "/fake" into the caller's buffer and return its size. */
static int32_t fake_cwd(void *ud, const sandlock_notif_data_t *n, sandlock_mem_handle_t *mem,
                        sandlock_action_out_t *out)
{
	(void)ud;
	static const uint8_t fake[] = "/fake";
	if (n->args[1] < sizeof fake || sandlock_mem_write(mem, n->args[0], fake, sizeof fake) != 0)
		sandlock_action_set_errno(out, ERANGE);
	else
		sandlock_action_set_return_value(out, (int64_t)sizeof fake);
	return 0;
}

TEST(child_memory_through_the_references_accessors)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	/* the probe reads the file outside the handler */
	const char *const cat[] = { "/bin/cat", "/etc/hostname", NULL };
	sandlock_result_t *r = sandlock_run(sb, NULL, cat, 2);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	sandlock_result_free(r);
	struct memctx c = { 0 };
	int nr = seccomp_syscall_resolve_name("openat");
	sandlock_handler_registration_t regs[] = {
		{ nr, sandlock_handler_new(deny_hostname, &c, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	r = sandlock_run_with_handlers(sb, NULL, cat, 2, regs, 1);
	REQUIRE(r);
	CHECK(!sandlock_result_success(r)); /* refused by the handler */
	CHECK(c.short_fails > 0 && c.raw_ok > 0);
	sandlock_result_free(r);
	const char *const pwd[] = { TU_PY, "-c", "import os; print(os.getcwd())", NULL };
	sandlock_handler_registration_t w[] = {
		{ seccomp_syscall_resolve_name("getcwd"),
		  sandlock_handler_new(fake_cwd, NULL, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	r = sandlock_run_with_handlers(sb, NULL, pwd, 3, w, 1);
	REQUIRE(r);
	CHECK(tu_out_is(r, "/fake\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

/* ---------------- fork and reduce, the reference's way ---------------- */

static void fork_init(void)
{
	setenv("REFABI_INIT", "ran", 1); /* inherited by every clone */
}

static void fork_work(uint32_t clone_id)
{
	const char *init = getenv("REFABI_INIT");
	printf("%u %s\n", clone_id, init ? init : "no-init");
	fflush(stdout);
}

TEST(fork_and_reduce_with_the_references_handles)
{
	sandlock_sandbox_t *pol = policy();
	REQUIRE(pol);
	sandlock_t *sb = sandlock_new_with_fns(pol, "forker", fork_init, fork_work);
	REQUIRE(sb);
	sandlock_fork_result_t *fr = sandlock_fork(sb, 3);
	REQUIRE(fr);
	CHECK_EQ_INT(sandlock_wait(sb), 0);
	CHECK_EQ_INT(sandlock_fork_result_count(fr), 3);
	for (uint32_t i = 0; i < 3; i++)
		CHECK(sandlock_fork_result_pid(fr, i) > 0);
	const char *const sort[] = { "/usr/bin/sort", NULL };
	sandlock_result_t *r = sandlock_reduce(fr, pol, "reducer", sort, 1); /* consumes fr */
	REQUIRE(r);
	CHECK(tu_out_is(r, "0 ran\n1 ran\n2 ran\n"));
	sandlock_result_free(r);
	/* a result freed without reducing */
	fr = sandlock_fork(sb, 1);
	REQUIRE(fr);
	sandlock_fork_result_free(fr);
	sandlock_sandbox_fns_free(sb);
	CHECK(sandlock_new_with_fns(pol, NULL, fork_init, NULL) == NULL);
	sandlock_sandbox_free(pol);
}

/* ---------------- pipelines and gathers ---------------- */

TEST(pipeline_stages_feed_each_other_and_keep_their_policy)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	sandlock_pipeline_t *p = sandlock_pipeline_new();
	const char *const a[] = { "/bin/echo", "hello", NULL };
	const char *const b[] = { "/usr/bin/tr", "a-z", "A-Z", NULL };
	sandlock_pipeline_add_stage(p, sb, a, 2);
	sandlock_pipeline_add_stage(p, sb, b, 3);
	sandlock_sandbox_free(sb); /* the stages hold their own reference */
	sandlock_result_t *r = sandlock_pipeline_run(p, 0); /* consumes p */
	REQUIRE(r);
	CHECK(sandlock_result_success(r) && tu_out_is(r, "HELLO\n"));
	sandlock_result_free(r);
}

TEST(pipeline_timeout_bounds_the_whole_run)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	sandlock_pipeline_t *p = sandlock_pipeline_new();
	const char *const a[] = { "/bin/sh", "-c", "echo one; exec sleep 30", NULL };
	const char *const b[] = { "/usr/bin/head", "-n1", NULL };
	sandlock_pipeline_add_stage(p, sb, a, 3);
	sandlock_pipeline_add_stage(p, sb, b, 2);
	int64_t t0 = now_s();
	sandlock_result_t *r = sandlock_pipeline_run(p, 300);
	REQUIRE(r);
	CHECK(now_s() - t0 < 10);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_REASON_TIMEOUT);
	CHECK(!sandlock_result_success(r) && tu_out_is(r, "one\n"));
	sandlock_result_free(r);
	sandlock_pipeline_t *empty = sandlock_pipeline_new();
	CHECK(sandlock_pipeline_run(empty, 0) == NULL);
	sandlock_pipeline_free(sandlock_pipeline_new());
	sandlock_sandbox_free(sb);
}

TEST(gather_consumer_reads_the_last_source_on_stdin_the_others_on_3_4)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	sandlock_gather_t *g = sandlock_gather_new();
	const char *const a[] = { "/bin/echo", "A", NULL };
	const char *const b[] = { "/bin/echo", "B", NULL };
	const char *const c[] = { "/bin/echo", "C", NULL };
	sandlock_gather_add_source(g, "a", sb, a, 2);
	sandlock_gather_add_source(g, "b", sb, b, 2);
	sandlock_gather_add_source(g, "c", sb, c, 2);
	const char *const consumer[] = { "/bin/sh", "-c",
		                         "read s; read x <&3; read y <&4; echo $s $x $y $_SANDLOCK_GATHER",
		                         NULL };
	sandlock_gather_set_consumer(g, sb, consumer, 3);
	sandlock_result_t *r = sandlock_gather_run(g, 30000);
	REQUIRE(r);
	CHECK(sandlock_result_success(r) && tu_out_is(r, "C A B a:3,b:4,c:0\n"));
	sandlock_result_free(r);
	/* a name that cannot be written into the variable fails the run */
	g = sandlock_gather_new();
	sandlock_gather_add_source(g, "a,b", sb, a, 2);
	sandlock_gather_set_consumer(g, sb, consumer, 3);
	CHECK(sandlock_gather_run(g, 0) == NULL);
	sandlock_gather_free(sandlock_gather_new());
	sandlock_sandbox_free(sb);
}

TEST(extra_deny_syscalls_takes_a_comma_list)
{
	const char *const argv[] = { TU_PY, "-c",
		                     "import os\ntry:\n    os.mkdir('/tmp/refabi-never')\nexcept OSError as e:\n"
		                     "    print(e.errno)\nelse:\n    print('made')\n", NULL };
	/* the probe: mkdir reaches the kernel (EACCES: /tmp is not granted) */
	sandlock_builder_t *b = tu_system_builder();
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	REQUIRE(sb);
	sandlock_result_t *r = sandlock_run(sb, NULL, argv, 3);
	REQUIRE(r);
	CHECK(tu_out_is(r, "13\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	/* "mkdir,mkdirat": both denied with EPERM before the kernel sees them */
	b = sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(), "mkdir,mkdirat");
	sb = sandlock_sandbox_build(b, &err, &msg);
	REQUIRE(sb);
	r = sandlock_run(sb, NULL, argv, 3);
	REQUIRE(r);
	CHECK(tu_out_is(r, "1\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	b = sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(), "mkdir,,mkdirat");
	CHECK(sandlock_sandbox_build(b, &err, &msg) == NULL && msg && strstr(msg, "empty name"));
	sandlock_string_free(msg);
	msg = NULL;
	b = sandlock_sandbox_builder_extra_allow_syscalls(tu_system_builder(), "sysv_ipc,sysv_ipc");
	sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
}

/* A system policy that may write dir (and, with workdir, stages it). */
static sandlock_sandbox_t *policy_writing(const char *dir, bool workdir)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_write(tu_system_builder(), dir);
	if (workdir)
		b = sandlock_sandbox_builder_workdir(b, dir);
	return tu_build(b);
}

TEST(create_waits_for_start_and_keeps_a_freed_policy)
{
	char dir[TU_TMPDIR_LEN], mark[TU_TMPDIR_LEN + 16], script[TU_TMPDIR_LEN + 64];
	REQUIRE(tu_mkdtemp(dir, "refcreate"));
	snprintf(mark, sizeof mark, "%s/started", dir);
	snprintf(script, sizeof script, "touch %s; uname -n", mark);
	sandlock_sandbox_t *sb = policy_writing(dir, false);
	REQUIRE(sb);
	const char *const argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_handle_t *h = sandlock_create(sb, "refcreate-box", argv, 3);
	sandlock_sandbox_free(sb); /* the handle holds what it needs */
	REQUIRE(h);
	CHECK(sandlock_handle_pid(h) > 0);
	tu_sleep_ms(300);
	CHECK(access(mark, F_OK) < 0); /* not run before sandlock_start */
	CHECK_EQ_INT(sandlock_start(h), 0);
	CHECK_EQ_INT(sandlock_start(h), -1); /* once */
	sandlock_result_t *r = sandlock_handle_wait(h);
	REQUIRE(r);
	CHECK(sandlock_result_success(r) && out_is(r, "refcreate-box\n"));
	CHECK(access(mark, F_OK) == 0);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	/* create_for_run: the same, for one-shot wrappers */
	sb = policy();
	REQUIRE(sb);
	const char *const t[] = { "/bin/true", NULL };
	h = sandlock_create_for_run(sb, NULL, t, 1);
	REQUIRE(h);
	CHECK_EQ_INT(sandlock_start(h), 0);
	r = sandlock_handle_wait(h);
	CHECK(r && sandlock_result_success(r));
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
}

TEST(popen_pipes_the_streams_asked_for)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	const char *const cat[] = { "/bin/sh", "-c", "cat; echo err >&2", NULL };
	int in = -2, out = -2, err = -2;
	sandlock_handle_t *h = sandlock_popen(sb, NULL, cat, 3, 1, 1, 2, &in, &out, &err);
	REQUIRE(h);
	CHECK(in >= 0 && out >= 0 && err == -1); /* null stream: no fd */
	CHECK(write(in, "hello", 5) == 5);
	close(in); /* the reference's rule: EOF before the wait */
	char buf[64] = "";
	tu_read_line(out, buf, sizeof buf);
	CHECK(tu_str_is(buf, "hello"));
	close(out);
	sandlock_result_t *r = sandlock_handle_wait(h);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	sandlock_result_free(r);
	sandlock_handle_free(h);
	/* an unknown mode: NULL, every fd -1, nothing started */
	in = out = err = -2;
	CHECK(sandlock_popen(sb, NULL, cat, 3, 1, 7, 0, &in, &out, &err) == NULL);
	CHECK(in == -1 && out == -1 && err == -1);
	sandlock_sandbox_free(sb);
}

TEST(run_interactive_uses_the_callers_stdio_and_returns_the_code)
{
	sandlock_sandbox_t *sb = policy();
	REQUIRE(sb);
	int p[2];
	REQUIRE(pipe(p) == 0);
	fflush(stdout);
	int saved = dup(1);
	dup2(p[1], 1);
	const char *const argv[] = { "/bin/sh", "-c", "echo on-my-stdout; exit 7", NULL };
	int code = sandlock_run_interactive(sb, NULL, argv, 3);
	dup2(saved, 1);
	close(saved);
	close(p[1]);
	CHECK_EQ_INT(code, 7);
	char buf[64] = "";
	tu_read_line(p[0], buf, sizeof buf);
	CHECK(tu_str_is(buf, "on-my-stdout"));
	close(p[0]);
	sandlock_sandbox_free(sb);
}

TEST(dry_run_lists_the_changes_and_applies_none)
{
	char dir[TU_TMPDIR_LEN], path[TU_TMPDIR_LEN + 8], script[4 * TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "refdry"));
	snprintf(path, sizeof path, "%s/a", dir);
	REQUIRE(tu_write_file(path, "old\n"));
	snprintf(path, sizeof path, "%s/c", dir);
	REQUIRE(tu_write_file(path, "gone?\n"));
	char *before = tu_tree_sum(dir);
	snprintf(script, sizeof script, "echo new > %s/b; echo mod > %s/a; rm %s/c; echo out",
		 dir, dir, dir);
	const char *const argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_sandbox_t *sb = policy_writing(dir, true);
	REQUIRE(sb);
	sandlock_dry_run_result_t *d = sandlock_dry_run(sb, NULL, argv, 3);
	REQUIRE(d);
	CHECK(sandlock_dry_run_result_success(d));
	CHECK_EQ_INT(sandlock_dry_run_result_exit_code(d), 0);
	CHECK_EQ_INT(sandlock_dry_run_result_signal(d), -1);
	uintptr_t n = 0;
	const uint8_t *o = sandlock_dry_run_result_stdout_bytes(d, &n);
	CHECK(o && n == 4 && memcmp(o, "out\n", 4) == 0);
	char got[256] = "";
	for (uintptr_t i = 0; i < sandlock_dry_run_result_changes_len(d); i++) {
		char *p = sandlock_dry_run_result_change_path(d, i);
		size_t l = strlen(got);
		snprintf(got + l, sizeof got - l, "%c %s;", sandlock_dry_run_result_change_kind(d, i),
			 p ? p : "?");
		sandlock_string_free(p);
	}
	CHECK(tu_str_is(got, "M a;A b;D c;"));
	CHECK(sandlock_dry_run_result_change_path(d, 99) == NULL);
	sandlock_dry_run_result_free(d);
	char *after = tu_tree_sum(dir);
	CHECK(before && after && strcmp(before, after) == 0); /* nothing applied */
	free(before);
	free(after);
	sandlock_sandbox_free(sb);
	/* without a workdir the writes would be real: refused */
	sb = policy_writing(dir, false);
	REQUIRE(sb);
	CHECK(sandlock_dry_run(sb, NULL, argv, 3) == NULL);
	CHECK(access(path, F_OK) == 0);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
}

TEST(builder_cpu_cores_and_time_start_take_the_references_forms)
{
	const uint32_t cores[] = { 0 };
	sandlock_builder_t *b = sandlock_sandbox_builder_cpu_cores(tu_system_builder(), cores, 1);
	b = sandlock_sandbox_builder_time_start(b, 315532800); /* 1980-01-01 */
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_result_t *r =
	    sh(sb, NULL, "date -u +%Y; nproc");
	REQUIRE(r);
	CHECK(sandlock_result_success(r) && out_is(r, "1980\n1\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	CHECK(tu_build(sandlock_sandbox_builder_cpu_cores(sandlock_sandbox_builder_new(), NULL, 2)) ==
	      NULL);
}

/* A guest binds a port held outside: port_remap moves it, and the
 * reference's JSON says where. */
TEST(handle_port_mappings_is_the_references_json)
{
	int port = 0;
	int held = tu_tcp_listener(&port);
	REQUIRE(held >= 0);
	char code[256];
	snprintf(code, sizeof code,
		 "import socket, time\ns = socket.socket()\ns.bind(('127.0.0.1', %d))\n"
		 "s.listen()\nprint('bound', flush=True)\ntime.sleep(30)\n", port);
	char spec[32];
	snprintf(spec, sizeof spec, "%d", port);
	sandlock_builder_t *b = sandlock_sandbox_builder_port_remap(tu_system_builder(), true);
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_net_allow_bind(b, spec));
	REQUIRE(sb);
	const char *const argv[] = { TU_PY, "-c", code, NULL };
	int in = -1, out = -1;
	sandlock_handle_t *h = sandlock_popen(sb, NULL, argv, 3, 2, 1, 0, &in, &out, NULL);
	REQUIRE(h);
	char line[32] = "";
	tu_read_line(out, line, sizeof line);
	CHECK(tu_str_is(line, "bound"));
	char *json = sandlock_handle_port_mappings(h);
	char want[32];
	snprintf(want, sizeof want, "{\"%d\":", port);
	CHECK(json && strncmp(json, want, strlen(want)) == 0 && json[strlen(json) - 1] == '}');
	if (json)
		fprintf(stderr, "  mappings: %s\n", json);
	sandlock_string_free(json);
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_free(sandlock_handle_wait(h));
	sandlock_handle_free(h);
	close(out);
	close(held);
	/* port_remap off: NULL */
	sandlock_sandbox_free(sb);
	sb = policy();
	REQUIRE(sb);
	const char *const t[] = { "/bin/true", NULL };
	h = sandlock_create(sb, NULL, t, 1);
	REQUIRE(h);
	CHECK(sandlock_handle_port_mappings(h) == NULL);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}
