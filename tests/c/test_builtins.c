/*
 * test_builtins.c — the builtin table's own rules (builtins/builtin.h):
 * a syscall has room for one LAST builtin (it must decide, so a second
 * one would never run and its guard would be lost silently).  The run
 * refuses such a table (chains.c: "internal: builtins ... both guard one
 * syscall"); here every combination of the settings that turn LAST
 * builtins on is checked to build a table without a clash, and a run of
 * the combination that once clashed shows both builtins' work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h" /* sl_builtin_traps, sl_builtin_last_clash: libsandlock.a */
#include "config.h"
#include "harness.h"
#include "testutil.h"

/* The settings that decide what the LAST builtins trap (proc.c, hosts.c,
 * netdest.c, sysvipc.c; meta.c and uts.c always trap). */
enum {
	K_PROC = 1 << 0,    /* /proc readable */
	K_CPUS = 1 << 1,    /* num_cpus */
	K_SEED = 1 << 2,    /* random_seed */
	K_DIRS = 1 << 3,    /* deterministic_dirs */
	K_HOSTS = 1 << 4,   /* a rule naming a host: the synthetic /etc/hosts */
	K_INJECT = 1 << 5,  /* http_inject_ca */
	K_REMAP = 1 << 6,   /* port_remap with binds allowed */
	K_SYSV = 1 << 7,    /* sysv_ipc re-allowed */
	K_ALL = (1 << 8) - 1,
};

static sandlock_builder_t *builder_for(unsigned k, const char *bundle)
{
	sandlock_builder_t *b = tu_system_builder();
	if (k & K_PROC)
		sandlock_sandbox_builder_fs_read(b, "/proc");
	if (k & K_CPUS)
		sandlock_sandbox_builder_num_cpus(b, 2);
	if (k & K_SEED)
		sandlock_sandbox_builder_random_seed(b, 7);
	if (k & K_DIRS)
		sandlock_sandbox_builder_deterministic_dirs(b, true);
	if (k & K_HOSTS)
		sandlock_sandbox_builder_net_allow(b, "localhost:80");
	if (k & K_INJECT) {
		sandlock_sandbox_builder_http_allow(b, "GET localhost/*");
		sandlock_sandbox_builder_http_inject_ca(b, bundle);
	}
	if (k & K_REMAP) {
		sandlock_sandbox_builder_port_remap(b, true);
		sandlock_sandbox_builder_net_allow_bind(b, "*");
	}
	if (k & K_SYSV)
		sandlock_sandbox_builder_extra_allow_syscalls(b, "sysv_ipc");
	return b;
}

/* The clash check of the table for sb, with the names on failure. */
static bool no_last_clash(const sandlock_sandbox_t *sb, unsigned k)
{
	struct sl_traps *per = calloc(sl_builtin_count, sizeof(*per));
	if (!per || sl_builtin_traps(sb, per) < 0) {
		free(per);
		return false;
	}
	size_t a, b;
	bool clash = sl_builtin_last_clash(per, &a, &b);
	if (clash)
		fprintf(stderr, "  settings %#x: '%s' and '%s' both trap one syscall\n", k,
		        sl_builtin_table[a]->name, sl_builtin_table[b]->name);
	for (size_t i = 0; i < sl_builtin_count; i++)
		free(per[i].v);
	free(per);
	return !clash;
}

TEST(no_two_last_builtins_trap_one_syscall_in_any_configuration)
{
	char dir[TU_TMPDIR_LEN], bundle[TU_TMPDIR_LEN + 16];
	CHECK(tu_mkdtemp(dir, "builtins"));
	snprintf(bundle, sizeof bundle, "%s/ca.pem", dir);
	CHECK(tu_write_file(bundle, "# bundle\n"));
	unsigned built = 0;
	for (unsigned k = 0; k <= K_ALL; k++) {
		sandlock_sandbox_t *sb = tu_build(builder_for(k, bundle));
		CHECK(sb != NULL);
		if (!sb)
			continue;
		built++;
		CHECK(no_last_clash(sb, k));
		sandlock_sandbox_free(sb);
	}
	CHECK_EQ_INT(built, K_ALL + 1);
	tu_rm_rf(dir);
}

/* The check itself: one syscall in two LAST builtins' traps is found,
 * the same syscall in a LAST and a FIRST builtin is not. */
TEST(the_clash_check_sees_a_shared_syscall)
{
	size_t l1 = SIZE_MAX, l2 = SIZE_MAX, f = SIZE_MAX;
	for (size_t i = 0; i < sl_builtin_count; i++) {
		if (sl_builtin_table[i]->phase == SL_PHASE_FIRST)
			f = f == SIZE_MAX ? i : f;
		else if (l1 == SIZE_MAX)
			l1 = i;
		else if (l2 == SIZE_MAX)
			l2 = i;
	}
	CHECK(l1 != SIZE_MAX && l2 != SIZE_MAX && f != SIZE_MAX);
	struct sl_traps *per = calloc(sl_builtin_count, sizeof(*per));
	CHECK(per != NULL);
	CHECK_EQ_INT(sl_traps_add(&per[l1], 1000), 0);
	CHECK_EQ_INT(sl_traps_add(&per[f], 1000), 0);
	size_t a = 0, b = 0;
	CHECK(!sl_builtin_last_clash(per, &a, &b));
	CHECK_EQ_INT(sl_traps_add(&per[l2], 1000), 0);
	CHECK(sl_builtin_last_clash(per, &a, &b));
	CHECK_EQ_INT(a, l1);
	CHECK_EQ_INT(b, l2);
	for (size_t i = 0; i < sl_builtin_count; i++)
		free(per[i].v);
	free(per);
}

/* What the guest reads of /etc/hosts and how many CPUs it counts, under k
 * (no /proc: the two views /proc/cpuinfo needs are left out, nproc reads
 * the affinity and /sys). */
static char *run_hosts_and_nproc(unsigned k)
{
	sandlock_builder_t *b = builder_for(k, NULL);
	sandlock_sandbox_builder_fs_read(b, "/sys");
	sandlock_result_t *r = tu_run_sh(b, "/bin/sh", "cat /etc/hosts; echo cpus $(nproc)");
	if (!r)
		return NULL;
	char *out = sandlock_result_stdout(r);
	if (sandlock_result_exit_code(r) != 0) {
		fprintf(stderr, "  exit %d: '%s'\n", sandlock_result_exit_code(r), out ? out : "");
		sandlock_string_free(out);
		out = NULL;
	}
	sandlock_result_free(r);
	return out;
}

/* A host rule and num_cpus without /proc once made two LAST builtins
 * trap the opens (hosts.c and proc.c) and every such run failed: now the
 * guest gets the synthetic /etc/hosts and its CPU count, the hosts file
 * the same as with the host rule alone. */
TEST(a_host_rule_with_num_cpus_serves_both)
{
	char *alone = run_hosts_and_nproc(K_HOSTS);
	char *both = run_hosts_and_nproc(K_HOSTS | K_CPUS);
	CHECK(alone != NULL && both != NULL);
	if (alone && both) {
		CHECK(strstr(alone, "127.0.0.1 localhost\n::1 localhost\n") == alone);
		CHECK(strstr(both, "\ncpus 2\n") != NULL);
		size_t n = (size_t)(strstr(alone, "cpus ") - alone);
		CHECK(strncmp(alone, both, n) == 0);
	}
	sandlock_string_free(alone);
	sandlock_string_free(both);
}
