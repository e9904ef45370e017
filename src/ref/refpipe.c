/*
 * refpipe.c — the reference's C pipelines and gathers: stages connected
 * by kernel pipes (never through the caller), each in its own sandbox,
 * started with sandlock_spawn and waited for within one deadline.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ref/refabi.h"
#include "run/result.h"
#include "util.h"

#define GATHER_ENV "_SANDLOCK_GATHER"
#define GATHER_MAX 64 /* sources: SANDLOCK_SPAWN_PASS_IN_ORDER's bound + stdin */

struct stage {
	const sandlock_sandbox_t *sb; /* a reference held (sl_sandbox_ref) */
	char **argv;                  /* NULL-terminated copy */
	unsigned int argc;
	char *name; /* gather sources */
};

struct sandlock_pipeline {
	struct stage *v;
	size_t n;
	bool bad; /* a stage could not be added: the run fails */
};

struct sandlock_gather {
	struct stage *v; /* the sources */
	size_t n;
	struct stage consumer;
	bool bad;
};

static void stage_free(struct stage *s)
{
	for (unsigned int i = 0; s->argv && i < s->argc; i++)
		free(s->argv[i]);
	free(s->argv);
	free(s->name);
	sandlock_sandbox_free((sandlock_sandbox_t *)(uintptr_t)s->sb);
	memset(s, 0, sizeof(*s));
}

/* A stage of policy running argv (copied); 0, or -1. */
static int stage_make(struct stage *s, const char *name, const sandlock_sandbox_t *policy,
                      const char *const *argv, unsigned int argc)
{
	memset(s, 0, sizeof(*s));
	if (!policy || !argv || argc == 0 || !(s->argv = calloc(argc + 1, sizeof(char *))))
		return -1;
	s->argc = argc;
	sl_sandbox_ref(policy);
	s->sb = policy;
	for (unsigned int i = 0; i < argc; i++)
		if (!argv[i] || !(s->argv[i] = strdup(argv[i]))) {
			stage_free(s);
			return -1;
		}
	if (name && !(s->name = strdup(name))) {
		stage_free(s);
		return -1;
	}
	return 0;
}

static int push(struct stage **v, size_t *n, const char *name, const sandlock_sandbox_t *policy,
                const char *const *argv, unsigned int argc)
{
	struct stage *g = realloc(*v, (*n + 1) * sizeof(**v));
	if (!g)
		return -1;
	*v = g;
	if (stage_make(&g[*n], name, policy, argv, argc) < 0)
		return -1;
	(*n)++;
	return 0;
}

SL_EXPORT sandlock_pipeline_t *sandlock_pipeline_new(void)
{
	return calloc(1, sizeof(sandlock_pipeline_t));
}

SL_EXPORT void sandlock_pipeline_add_stage(sandlock_pipeline_t *pipe,
                                           const sandlock_sandbox_t *policy,
                                           const char *const *argv, unsigned int argc)
{
	if (pipe && push(&pipe->v, &pipe->n, NULL, policy, argv, argc) < 0)
		pipe->bad = true;
}

SL_EXPORT void sandlock_pipeline_free(sandlock_pipeline_t *pipe)
{
	if (!pipe)
		return;
	for (size_t i = 0; i < pipe->n; i++)
		stage_free(&pipe->v[i]);
	free(pipe->v);
	free(pipe);
}

static sandlock_stdio_t stdio_fd(int fd)
{
	return fd >= 0 ? (sandlock_stdio_t){ SANDLOCK_STDIO_FD, fd }
	               : (sandlock_stdio_t){ SANDLOCK_STDIO_DEVNULL, -1 };
}

static sandlock_handle_t *start(const struct stage *s, const sandlock_sandbox_t *sb, int in,
                                int out, const int32_t *pass, size_t npass)
{
	sandlock_spawn_opts_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.stdio[0] = stdio_fd(in);
	o.stdio[1] = out >= 0 ? stdio_fd(out) : (sandlock_stdio_t){ SANDLOCK_STDIO_CAPTURE, -1 };
	o.stdio[2] = (sandlock_stdio_t){ SANDLOCK_STDIO_CAPTURE, -1 };
	o.flags = npass ? SANDLOCK_SPAWN_PASS_IN_ORDER : 0;
	o.pass_fds = pass;
	o.npass_fds = npass;
	return sandlock_spawn(sb, (const char *const *)s->argv, s->argc, NULL, 0, &o, NULL, NULL);
}

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Wait for every handle within timeout_ms (0: none); the last one's
 * result, marked TIMEOUT if the deadline ended the run.  Frees h[].
 */
static sandlock_result_t *finish(sandlock_handle_t **h, size_t n, uint64_t timeout_ms)
{
	int64_t deadline = timeout_ms ? now_ms() + (int64_t)(timeout_ms > INT32_MAX ? INT32_MAX
	                                                                            : timeout_ms)
	                              : -1;
	bool late = false;
	sandlock_result_t *last = NULL;
	for (size_t i = 0; i < n; i++) {
		int err = 0;
		int64_t left = deadline < 0 ? -1 : deadline - now_ms();
		sandlock_result_t *r = sandlock_handle_wait_ms(h[i], left < 0 && deadline >= 0 ? 0 : left,
		                                               &err, NULL);
		if (!r && err == SANDLOCK_ERR_RUNNING) {
			late = true; /* the whole pipeline is over: end every stage */
			for (size_t j = i; j < n; j++)
				(void)sandlock_handle_kill(h[j]);
			r = sandlock_handle_wait_ms(h[i], -1, NULL, NULL);
		}
		if (i + 1 == n)
			last = r;
		else
			sandlock_result_free(r);
		sandlock_handle_free(h[i]);
	}
	if (late && last) {
		last->reason = SANDLOCK_EXIT_TIMEOUT;
		last->exit_code = 124;
		last->signal = 0;
	}
	return last;
}

static void abort_started(sandlock_handle_t **h, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sandlock_handle_free(h[i]); /* ends what still runs */
}

SL_EXPORT sandlock_result_t *sandlock_pipeline_run(sandlock_pipeline_t *pipe, uint64_t timeout_ms)
{
	if (!pipe)
		return NULL;
	sandlock_handle_t **h = calloc(pipe->n ? pipe->n : 1, sizeof(*h));
	sandlock_result_t *r = NULL;
	size_t started = 0;
	int prev = -1; /* read end feeding the next stage */
	bool ok = h && !pipe->bad && pipe->n > 0;
	for (size_t i = 0; ok && i < pipe->n; i++) {
		int p[2] = { -1, -1 };
		bool last = i + 1 == pipe->n;
		if (!last && pipe2(p, O_CLOEXEC) < 0)
			ok = false;
		if (ok && !(h[started] = start(&pipe->v[i], pipe->v[i].sb, prev, p[1], NULL, 0)))
			ok = false;
		else if (ok)
			started++;
		/* the stage has its own copies: ours would hold the EOF back */
		if (prev >= 0)
			close(prev);
		if (p[1] >= 0)
			close(p[1]);
		prev = p[0];
	}
	if (prev >= 0)
		close(prev);
	if (ok)
		r = finish(h, started, timeout_ms);
	else if (h)
		abort_started(h, started);
	free(h);
	sandlock_pipeline_free(pipe);
	return r;
}

SL_EXPORT sandlock_gather_t *sandlock_gather_new(void)
{
	return calloc(1, sizeof(sandlock_gather_t));
}

SL_EXPORT void sandlock_gather_add_source(sandlock_gather_t *g, const char *name,
                                          const sandlock_sandbox_t *policy,
                                          const char *const *argv, unsigned int argc)
{
	if (!g)
		return;
	/* names go into "name:fd,..." */
	bool bad_name = !name || !*name || strpbrk(name, ",:=") || g->n >= GATHER_MAX;
	if (bad_name || push(&g->v, &g->n, name, policy, argv, argc) < 0)
		g->bad = true;
}

SL_EXPORT void sandlock_gather_set_consumer(sandlock_gather_t *g, const sandlock_sandbox_t *policy,
                                            const char *const *argv, unsigned int argc)
{
	if (!g)
		return;
	stage_free(&g->consumer);
	if (stage_make(&g->consumer, NULL, policy, argv, argc) < 0)
		g->bad = true;
}

SL_EXPORT void sandlock_gather_free(sandlock_gather_t *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		stage_free(&g->v[i]);
	free(g->v);
	stage_free(&g->consumer);
	free(g);
}

/* "a:3,b:4,...,last:0": where the consumer finds each source. */
static char *gather_spec(const sandlock_gather_t *g)
{
	size_t len = sizeof(GATHER_ENV) + 1;
	for (size_t i = 0; i < g->n; i++)
		len += strlen(g->v[i].name) + 8;
	char *s = malloc(len);
	if (!s)
		return NULL;
	size_t off = (size_t)snprintf(s, len, "%s=", GATHER_ENV);
	for (size_t i = 0; i < g->n; i++)
		off += (size_t)snprintf(s + off, len - off, "%s%s:%zu", i ? "," : "", g->v[i].name,
		                        i + 1 == g->n ? (size_t)0 : i + 3);
	return s;
}

/*
 * The consumer's policy with the gather variable added to its
 * environment: a shallow copy (see sl_named_policy) whose env vector is
 * ours for this run; the strings stay the policy's.
 */
static const sandlock_sandbox_t *with_spec(const sandlock_sandbox_t *sb, char *spec,
                                           sandlock_sandbox_t *copy, char ***env)
{
	*copy = *sb;
	*env = calloc(sb->env.n + 1, sizeof(char *));
	if (!*env)
		return NULL;
	if (sb->env.n) /* no vector at all when empty: memcpy's NULL is UB */
		memcpy(*env, sb->env.v, sb->env.n * sizeof(char *));
	(*env)[sb->env.n] = spec;
	copy->env.v = *env;
	copy->env.n = copy->env.cap = sb->env.n + 1;
	return copy;
}

SL_EXPORT sandlock_result_t *sandlock_gather_run(sandlock_gather_t *g, uint64_t timeout_ms)
{
	if (!g)
		return NULL;
	size_t n = g->n;
	sandlock_handle_t **h = calloc(n + 1, sizeof(*h));
	int *ends = calloc(n ? n : 1, sizeof(int));
	int32_t pass[GATHER_MAX];
	char *spec = gather_spec(g);
	char **env = NULL;
	sandlock_sandbox_t copy;
	sandlock_result_t *r = NULL;
	size_t started = 0;
	bool ok = h && ends && spec && !g->bad && n > 0 && g->consumer.sb;
	for (size_t i = 0; ends && i < n; i++)
		ends[i] = -1;
	for (size_t i = 0; ok && i < n; i++) {
		int p[2];
		if (pipe2(p, O_CLOEXEC) < 0) {
			ok = false;
			break;
		}
		ends[i] = p[0];
		h[started] = start(&g->v[i], g->v[i].sb, -1, p[1], NULL, 0);
		close(p[1]);
		if (!h[started])
			ok = false;
		else
			started++;
	}
	const sandlock_sandbox_t *csb = ok ? with_spec(g->consumer.sb, spec, &copy, &env) : NULL;
	for (size_t i = 0; csb && i + 1 < n; i++)
		pass[i] = ends[i];
	if (csb && (h[started] = start(&g->consumer, csb, ends[n - 1], -1, pass, n - 1)))
		started++;
	else
		ok = false;
	for (size_t i = 0; ends && i < n; i++)
		if (ends[i] >= 0)
			close(ends[i]); /* the consumer has its copies */
	if (ok)
		r = finish(h, started, timeout_ms);
	else if (h)
		abort_started(h, started);
	free(env);
	free(spec);
	free(ends);
	free(h);
	sandlock_gather_free(g);
	return r;
}
