/*
 * test_builder.c — configuration validation: every error path of
 * sandlock_sandbox_build and the argument checks of sandlock_run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* Build b and expect failure with code; the message must mention needle. */
static void expect_error(sandlock_builder_t *b, int code, const char *needle)
{
	int err = -1;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb == NULL);
	CHECK_EQ_INT(err, code);
	CHECK(msg != NULL);
	if (needle && msg && !strstr(msg, needle)) {
		fprintf(stderr, "  message '%s' lacks '%s'\n", msg, needle);
		CHECK(strstr(msg, needle));
	}
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

TEST(success_and_chaining)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	b = sandlock_sandbox_builder_fs_read(b, "/usr");
	b = sandlock_sandbox_builder_fs_write(b, "/tmp");
	b = sandlock_sandbox_builder_fs_deny(b, "/usr/share");
	b = sandlock_sandbox_builder_net_allow_port(b, 80);
	b = sandlock_sandbox_builder_net_allow_bind_port(b, 65535);
	b = sandlock_sandbox_builder_env_var(b, "A", "");
	b = sandlock_sandbox_builder_max_memory(b, 0);
	b = sandlock_sandbox_builder_max_processes(b, 0);
	b = sandlock_sandbox_builder_cwd(b, "/tmp");
	b = sandlock_sandbox_builder_timeout_ms(b, 1000);
	REQUIRE(b);
	int err = -1;
	char *msg = (char *)"unchanged";
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb != NULL);
	CHECK_EQ_INT(err, SANDLOCK_OK);
	CHECK(msg == NULL);
	sandlock_sandbox_free(sb);
}

TEST(null_builder_tolerated)
{
	CHECK(sandlock_sandbox_builder_fs_read(NULL, "/usr") == NULL);
	CHECK(sandlock_sandbox_builder_net_allow_port(NULL, 80) == NULL);
	CHECK(sandlock_sandbox_builder_env_var(NULL, "A", "b") == NULL);
	CHECK(sandlock_sandbox_builder_clean_env(NULL, true) == NULL);
	sandlock_sandbox_builder_free(NULL);
	sandlock_sandbox_free(NULL);
	int err = 0;
	CHECK(sandlock_sandbox_build(NULL, &err, NULL) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
}

TEST(missing_path)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_read(b, "/usr");
	sandlock_sandbox_builder_fs_read(b, "/no/such/sandlock/path");
	expect_error(b, SANDLOCK_ERR_NOT_FOUND, "/no/such/sandlock/path");
	b = sandlock_sandbox_builder_cwd(sandlock_sandbox_builder_new(), "/no/such/cwd");
	expect_error(b, SANDLOCK_ERR_NOT_FOUND, "/no/such/cwd");
	b = sandlock_sandbox_builder_fs_deny(sandlock_sandbox_builder_new(), "/no/such/deny");
	expect_error(b, SANDLOCK_ERR_NOT_FOUND, "/no/such/deny");
}

TEST(bad_ports)
{
	expect_error(sandlock_sandbox_builder_net_allow_port(sandlock_sandbox_builder_new(), 0),
	             SANDLOCK_ERR_BAD_PORT, "0");
	expect_error(sandlock_sandbox_builder_net_allow_bind_port(sandlock_sandbox_builder_new(), 70000),
	             SANDLOCK_ERR_BAD_PORT, "70000");
}

/* The first error wins even when later calls are also wrong. */
TEST(first_error_is_reported)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_net_allow_port(b, 0);
	sandlock_sandbox_builder_env_var(b, "A=B", "c");
	expect_error(b, SANDLOCK_ERR_BAD_PORT, NULL);
}

TEST(deny_equals_allow_conflict)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_read(b, "/usr");
	sandlock_sandbox_builder_fs_deny(b, "/usr/");
	expect_error(b, SANDLOCK_ERR_CONFLICT, "/usr");
	b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_write(b, "/tmp");
	sandlock_sandbox_builder_fs_deny(b, "/tmp");
	expect_error(b, SANDLOCK_ERR_CONFLICT, "/tmp");
}

TEST(writable_proc_conflict)
{
	expect_error(sandlock_sandbox_builder_fs_write(sandlock_sandbox_builder_new(), "/proc"),
	             SANDLOCK_ERR_CONFLICT, "/proc");
	expect_error(sandlock_sandbox_builder_fs_write(sandlock_sandbox_builder_new(), "/proc/self"),
	             SANDLOCK_ERR_CONFLICT, "/proc");
	expect_error(sandlock_sandbox_builder_fs_write(sandlock_sandbox_builder_new(), "/"),
	             SANDLOCK_ERR_CONFLICT, "/proc");
	/* Read-only /proc is fine. */
	int err = -1;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(
		sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "/proc"), &err, NULL);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
}

TEST(bad_env_key)
{
	expect_error(sandlock_sandbox_builder_env_var(sandlock_sandbox_builder_new(), "", "x"),
	             SANDLOCK_ERR_INVALID, NULL);
	expect_error(sandlock_sandbox_builder_env_var(sandlock_sandbox_builder_new(), "A=B", "x"),
	             SANDLOCK_ERR_INVALID, "A=B");
	expect_error(sandlock_sandbox_builder_env_var(sandlock_sandbox_builder_new(), NULL, "x"),
	             SANDLOCK_ERR_INVALID, NULL);
}

TEST(relative_path_resolved_against_cwd)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "rel"));
	char cwd[4096];
	REQUIRE(getcwd(cwd, sizeof cwd));
	REQUIRE(chdir(dir) == 0);
	REQUIRE(mkdir("sub", 0755) == 0);
	int err = -1;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(
		sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "sub"), &err, NULL);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
	expect_error(sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "nosub"),
	             SANDLOCK_ERR_NOT_FOUND, "nosub");
	rmdir("sub");
	CHECK(chdir(cwd) == 0);
	rmdir(dir);
}

TEST(run_argument_errors)
{
	sandlock_sandbox_t *sb = sandlock_sandbox_build(
		sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "/usr"), NULL, NULL);
	REQUIRE(sb);
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_run_err(sb, NULL, 1, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	CHECK(msg != NULL);
	sandlock_string_free(msg);
	const char *argv[] = { "/bin/true", NULL };
	err = 0;
	CHECK(sandlock_run_err(sb, argv, 0, &err, NULL) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	err = 0;
	CHECK(sandlock_run_err(sb, argv, 2, &err, NULL) == NULL); /* argv[1] is NULL */
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	err = 0;
	CHECK(sandlock_run_err(NULL, argv, 1, &err, NULL) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	/* and the sandbox still works afterwards */
	sandlock_result_t *r = sandlock_run_err(sb, argv, 1, &err, NULL);
	CHECK(r && sandlock_result_success(r));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

/* A sandbox is reusable: several runs of one configuration. */
TEST(sandbox_reusable)
{
	sandlock_sandbox_t *sb = sandlock_sandbox_build(
		sandlock_sandbox_builder_fs_read(sandlock_sandbox_builder_new(), "/usr"), NULL, NULL);
	REQUIRE(sb);
	const char *argv[] = { "/bin/echo", "again", NULL };
	for (int i = 0; i < 3; i++) {
		sandlock_result_t *r = sandlock_run_err(sb, argv, 2, NULL, NULL);
		CHECK(tu_out_is(r, "again\n"));
		sandlock_result_free(r);
	}
	sandlock_sandbox_free(sb);
}
