/*
 * learnprofile.c — learn's profile (learnprofile.h): the files a traced
 * run used made into [filesystem] grants (the run's own /proc as /proc,
 * paths under another dropped, --collapse, --merge) and printed.  Apart
 * from trace.c, which watches the calls and records the files, because
 * turning a record into a profile is a mechanism of its own.
 */
#include "learnprofile.h"

#include "profile.h"
#include "tracepath.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The sorted paths of l worth granting, into *g: /proc/PID/... of the
 * run's own processes become /proc, paths under another listed path are
 * dropped, and so are paths that no longer exist (a profile naming them
 * would not build).
 */
static void grant_paths(bool tty, struct cli_list *g, const struct cli_list *l, bool writing)
{
	char **v = calloc(l->n ? l->n : 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < l->n; i++) {
		const char *p = l->v[i];
		bool proc = strncmp(p, "/proc/", 6) == 0 || strcmp(p, "/proc") == 0;
		if ((writing && proc) || cli_path_default_device(tty, p))
			continue; /* /proc is never writable; these need no grant */
		char *q = strdup(proc ? "/proc" : p);
		if (q && access(q, F_OK) == 0)
			v[n++] = q;
		else
			free(q);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	const char *last = NULL;
	for (size_t i = 0; i < n; i++) {
		if (!last || !cli_path_under(v[i], last)) {
			(void)cli_list_add(g, v[i]);
			last = v[i];
		}
	}
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* The parent directory of p (a heap string), "/" for a top-level path. */
static char *parent_of(const char *p)
{
	const char *slash = strrchr(p, '/');
	return slash == p || !slash ? strdup("/") : strndup(p, (size_t)(slash - p));
}

/* p is an entry of directory dir (not deeper). */
static bool is_child(const char *p, const char *dir)
{
	size_t n = strcmp(dir, "/") == 0 ? 0 : strlen(dir);
	return strncmp(p, dir, n) == 0 && p[n] == '/' && p[n + 1] && !strchr(p + n + 1, '/');
}

/*
 * --collapse N: a directory at least n of whose entries are granted is
 * granted whole instead (never "/").  g is sorted, so the entries of one
 * directory are mostly adjacent: a count can only come out low, never
 * grant a directory with fewer than n used entries.
 */
static int collapse_paths(bool tty, struct cli_list *g, unsigned n, bool writing)
{
	struct cli_list out = { 0 };
	int rc = 0;
	for (size_t i = 0, j; i < g->n && rc == 0; i = j) {
		char *dir = parent_of(g->v[i]);
		if (!dir)
			return -1;
		for (j = i + 1; j < g->n && is_child(g->v[j], dir);)
			j++;
		bool whole = j - i >= n && strcmp(dir, "/") != 0;
		if (whole)
			rc = cli_list_add(&out, dir);
		for (size_t k = i; k < j && rc == 0 && !whole; k++)
			rc = cli_list_add(&out, g->v[k]);
		free(dir);
	}
	cli_list_free(g);
	memset(g, 0, sizeof(*g));
	if (rc == 0)
		grant_paths(tty, g, &out, writing);
	cli_list_free(&out);
	return rc;
}

/* Each path of l once (the order kept). */
static int unique_paths(struct cli_list *l)
{
	struct cli_list out = { 0 };
	int rc = 0;
	for (size_t i = 0; i < l->n && rc == 0; i++) {
		bool seen = false;
		for (size_t j = 0; j < out.n && !seen; j++)
			seen = strcmp(out.v[j], l->v[i]) == 0;
		if (!seen)
			rc = cli_list_add(&out, l->v[i]);
	}
	cli_list_free(l);
	*l = out;
	return rc;
}

/* The run's options with the files it used as its [filesystem] grants,
 * printed by the profile printer (profile.c) that inspect --toml uses. */
int cli_learn_print_profile(const struct cli_list *used_read, const struct cli_list *used_write,
                            bool tty, const struct cli_cfg *cfg, const struct cli_cfg *base,
                            unsigned collapse, FILE *out)
{
	/* What was written is listed once, as writable (that covers reading). */
	struct cli_list reads = { 0 };
	for (size_t i = 0; i < used_read->n; i++)
		if (!cli_path_first_under(used_write, used_read->v[i]))
			(void)cli_list_add(&reads, used_read->v[i]);
	struct cli_cfg learned = *cfg; /* borrowed: only read/write are ours */
	memset(&learned.read, 0, sizeof learned.read);
	memset(&learned.write, 0, sizeof learned.write);
	grant_paths(tty, &learned.read, &reads, false);
	grant_paths(tty, &learned.write, used_write, true);
	int rc = 0;
	if (collapse)
		rc = collapse_paths(tty, &learned.read, collapse, false) < 0 ||
		     collapse_paths(tty, &learned.write, collapse, true) < 0 ? -1 : 0;
	struct cli_cfg merged;
	cli_cfg_init(&merged);
	if (rc == 0 && base)
		rc = cli_cfg_merge(&merged, base, &learned) < 0 || unique_paths(&merged.read) < 0 ||
		     unique_paths(&merged.write) < 0 ? -1 : 0;
	if (rc == 0) {
		fputs("# Written by `sandlock learn`: the files this run used, and its options.\n",
		      out);
		cli_profile_print(base ? &merged : &learned, out);
	}
	cli_cfg_free(&merged);
	cli_list_free(&reads);
	cli_list_free(&learned.read);
	cli_list_free(&learned.write);
	return rc;
}
