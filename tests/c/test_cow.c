/*
 * test_cow.c — the copy-on-write workdir (builtins/cow.c, cow.c): a
 * shell workload under workdir is staged, listed, and committed or
 * thrown away; the real tree is never written during the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

/* The whole tree as one string ("path:content;" sorted), for comparisons. */
static char *tree_digest(const char *dir)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd,
	         "cd %s && find . | sort | while read f; do echo \"$f\"; "
	         "[ -f \"$f\" ] && cat \"$f\"; done", dir);
	FILE *p = popen(cmd, "r");
	if (!p)
		return NULL;
	static char buf[65536];
	size_t n = fread(buf, 1, sizeof buf - 1, p);
	buf[n] = '\0';
	pclose(p);
	return strdup(buf);
}

static void make_tree(const char *dir)
{
	char p[256];
	snprintf(p, sizeof p, "%s/a", dir);
	tu_write_file(p, "old\n");
	snprintf(p, sizeof p, "%s/d", dir);
	mkdir(p, 0755);
	snprintf(p, sizeof p, "%s/d/k", dir);
	tu_write_file(p, "keep\n");
}

static sandlock_result_t *run_in(const char *dir, int action, const char *script)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_workdir(b, dir);
	sandlock_sandbox_builder_on_exit(b, action);
	sandlock_sandbox_builder_cwd(b, dir);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

static const char *WORKLOAD = "echo new > a; echo x > b; rm d/k; mkdir e; echo y > e/f; "
                              "mv b c; cat a c; ls; ls d";

/* The change list as "K path\n" lines. */
static void changes_text(const sandlock_result_t *r, char *out, size_t cap)
{
	out[0] = '\0';
	for (size_t i = 0; i < sandlock_result_change_count(r, false); i++) {
		char k;
		const char *p = sandlock_result_change(r, false, i, &k);
		size_t n = strlen(out);
		snprintf(out + n, cap - n, "%c %s\n", k, p);
	}
}

TEST(abort_leaves_tree_identical_and_lists_changes)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	char *before = tree_digest(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_ABORT, WORKLOAD);
	REQUIRE(r);
	/* The guest saw its own writes (merged view, whiteouts hidden). */
	CHECK(tu_out_is(r, "new\nx\na\nc\nd\ne\n"));
	char ch[1024];
	changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "M a\nA c\nD d/k\nA e\nA e/f\n") == 0);
	char *after = tree_digest(dir);
	CHECK(before && after && strcmp(before, after) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(commit_applies_the_change_list)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_COMMIT, WORKLOAD);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	CHECK(sandlock_result_cow_kept(r) == NULL);
	char *after = tree_digest(dir);
	CHECK(after && strcmp(after, ".\n./a\nnew\n./c\nx\n./d\n./e\n./e/f\ny\n") == 0);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Hostile: write through an O_PATH fd's magic link, and a direct write
 * with the workdir's real path spelled via /proc/self/cwd. */
TEST(no_write_reaches_the_real_tree_before_commit)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "cow"));
	make_tree(dir);
	char *before = tree_digest(dir);
	sandlock_result_t *r = run_in(dir, SANDLOCK_BRANCH_ABORT,
	                              "exec 3<a; echo evil 1<>/proc/self/fd/3; "
	                              "echo evil > /proc/self/cwd/a; echo evil >> a; true");
	REQUIRE(r);
	char *after = tree_digest(dir);
	CHECK(before && after && strcmp(before, after) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

TEST(fs_write_over_workdir_is_refused)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, "/tmp");
	sandlock_sandbox_builder_workdir(b, "/tmp");
	sandlock_sandbox_builder_fs_storage(b, "/tmp");
	int err;
	char *msg;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb == NULL);
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}
