/*
 * cowfloor.c — the floor of a copy-on-write workdir's cost (issue 20).
 *
 *   cowfloor [-r DIR]... PROJECT TMP -- CMD [ARGS...]
 *
 * Runs CMD in PROJECT under the sandbox of `sandlock run -r /usr -r /bin
 * -r /lib -r /lib64 -r /etc -w TMP -w /dev/null -C PROJECT -w PROJECT`
 * (bench/toolchains.py's "plain" mode) with, in addition, every syscall
 * that `--workdir PROJECT` traps sent to the supervisor and answered
 * CONTINUE at once by a C handler that reads nothing: the cost of
 * per-call interception alone, with none of the layer's work.  Each -r
 * adds a directory read-only (the per-call loops of bench/run.py run a
 * program from build/bench).  A real
 * COW run cannot be faster than this on the same machine (the kernel
 * round trip, the supervisor's wake-up and dispatch), so toolchains.py
 * reports it as the "floor" mode beside bare, plain and COW.
 *
 * The trap set is asked of the COW builtin itself (its `syscalls` hook
 * for a configuration with workdir set), so it stays exactly what a real
 * run traps.  This is a benchmark only: nothing here ships, the library
 * has no such mode.  Exits with CMD's status (125 on a setup failure).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandlock.h"
#include "trap.h"
#include "builtins/builtin.h"

extern const struct sl_builtin sl_builtin_cow; /* builtins/cow/cow.c */

static const char *const k_sys_ro[] = { "/usr", "/bin", "/lib", "/lib64", "/etc" };
static const char *extra_ro[8]; /* -r DIR */
static size_t n_extra_ro;

static int32_t answer_continue(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                               sandlock_action_t *out)
{
	(void)ud, (void)n, (void)m;
	sandlock_action_set_continue(out);
	return 0;
}

/* The sandbox of toolchains.py's plain mode; with cow, --workdir PROJECT
 * in place of -w PROJECT (only to ask the COW builtin what it traps). */
static sandlock_sandbox_t *make_sandbox(const char *proj, const char *tmp, bool cow)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	for (size_t i = 0; i < sizeof k_sys_ro / sizeof k_sys_ro[0]; i++)
		if (access(k_sys_ro[i], F_OK) == 0)
			sandlock_sandbox_builder_fs_read(b, k_sys_ro[i]);
	for (size_t i = 0; i < n_extra_ro; i++)
		sandlock_sandbox_builder_fs_read(b, extra_ro[i]);
	sandlock_sandbox_builder_fs_write(b, tmp);
	sandlock_sandbox_builder_fs_write(b, "/dev/null");
	sandlock_sandbox_builder_cwd(b, proj);
	if (cow)
		sandlock_sandbox_builder_workdir(b, proj);
	else
		sandlock_sandbox_builder_fs_write(b, proj);
	sandlock_sandbox_builder_inherit_stdio(b, true);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb)
		fprintf(stderr, "cowfloor: sandbox build failed (%d): %s\n", err, msg ? msg : "?");
	return sb;
}

/* One CONTINUE handler registered on every syscall the COW builtin traps
 * for a workdir run; the number of registrations, or -1. */
static long cow_registrations(const char *proj, const char *tmp,
                              sandlock_handler_registration_t **out)
{
	sandlock_sandbox_t *cow = make_sandbox(proj, tmp, true);
	struct sl_traps traps = { 0 };
	if (!cow || sl_builtin_cow.syscalls(cow, &traps) < 0 || traps.n == 0) {
		sandlock_sandbox_free(cow);
		sl_traps_free(&traps);
		return -1;
	}
	sandlock_sandbox_free(cow);
	sandlock_handler_t *h = sandlock_handler_new(answer_continue, NULL, NULL,
	                                             SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_registration_t *regs = calloc(traps.n, sizeof(*regs));
	long n = 0;
	for (size_t i = 0; regs && i < traps.n; i++) {
		bool dup = false; /* a syscall listed by two classes: once */
		for (long j = 0; j < n; j++)
			dup |= regs[j].syscall_nr == traps.v[i].nr;
		if (!dup)
			regs[n++] = (sandlock_handler_registration_t){ traps.v[i].nr, h };
	}
	sl_traps_free(&traps);
	*out = regs;
	return regs ? n : -1;
}

int main(int argc, char **argv)
{
	while (argc > 2 && !strcmp(argv[1], "-r") && n_extra_ro < 8) {
		extra_ro[n_extra_ro++] = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: cowfloor [-r DIR]... PROJECT TMP -- CMD [ARGS...]\n");
		return 125;
	}
	const char *proj = argv[1], *tmp = argv[2];
	sandlock_handler_registration_t *regs = NULL;
	long nregs = cow_registrations(proj, tmp, &regs);
	sandlock_sandbox_t *sb = nregs > 0 ? make_sandbox(proj, tmp, false) : NULL;
	if (!sb) {
		fprintf(stderr, "cowfloor: cannot set up the run\n");
		return 125;
	}
	sandlock_result_t *r = sandlock_run_interactive_with_handlers(
	    sb, NULL, (const char *const *)argv + 4, (uint32_t)(argc - 4), regs, (uintptr_t)nregs);
	free(regs);
	sandlock_sandbox_free(sb);
	if (!r) {
		fprintf(stderr, "cowfloor: the run failed\n");
		return 125;
	}
	int code = 0;
	if (!sandlock_result_success(r)) /* a signal or a KILL answer: still a failure */
		code = sandlock_result_exit_code(r) > 0 ? sandlock_result_exit_code(r) : 1;
	sandlock_result_free(r);
	return code;
}
