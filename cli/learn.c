/*
 * learn.c — where `sandlock learn` writes its profile (see learn.h).
 */
#include "learn.h"

#include "profile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXIT_SANDLOCK 125

static int fail(const char *what, const char *path, const char *why)
{
	fprintf(stderr, "sandlock: learn %s %s: %s\n", what, path, why);
	return EXIT_SANDLOCK;
}

/* The profile at path, loaded into *out (initialised here). */
static int load_base(const char *path, struct cli_cfg *out)
{
	char *err = NULL;
	if (cli_profile_load(path, out, &err) == 0)
		return 0;
	int rc = fail("--merge", path, err ? err : "out of memory");
	free(err);
	return rc;
}

int cli_learn_check(const struct cli_learn_opts *o)
{
	if (o->output && o->merge)
		return fail("--output", o->output, "give either --output or --merge, not both");
	if (!o->merge)
		return 0;
	struct cli_cfg base;
	int rc = load_base(o->merge, &base);
	if (rc == 0)
		cli_cfg_free(&base);
	return rc;
}

/* Write the profile to path through a temporary file in its directory, so
 * a failure leaves the old file (a --merge profile) as it was. */
static int write_file(const struct cli_trace *t, const struct cli_cfg *cfg,
                      const struct cli_cfg *base, unsigned collapse, const char *path,
                      const char *flag)
{
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	if (!tmp)
		return fail(flag, path, "out of memory");
	snprintf(tmp, n, "%s.XXXXXX", path);
	int fd = mkstemp(tmp);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		int rc = fail(flag, path, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(tmp);
		}
		free(tmp);
		return rc;
	}
	int rc = cli_trace_print_profile(t, cfg, base, collapse, f);
	int werr = ferror(f);
	if (fclose(f) != 0 || werr || rc < 0 || rename(tmp, path) < 0) {
		rc = fail(flag, path, rc < 0 ? "out of memory" : strerror(errno ? errno : EIO));
		unlink(tmp);
	}
	free(tmp);
	return rc;
}

int cli_learn_emit(const struct cli_trace *t, const struct cli_cfg *cfg,
                   const struct cli_learn_opts *o)
{
	if (o->merge) {
		struct cli_cfg base;
		int rc = load_base(o->merge, &base);
		if (rc == 0) {
			rc = write_file(t, cfg, &base, o->collapse, o->merge, "--merge");
			cli_cfg_free(&base);
		}
		return rc;
	}
	if (o->output)
		return write_file(t, cfg, NULL, o->collapse, o->output, "--output");
	if (cli_trace_print_profile(t, cfg, NULL, o->collapse, stdout) < 0) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	return 0;
}
