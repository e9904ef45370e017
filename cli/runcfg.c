/*
 * runcfg.c — the CLI's intermediate run configuration (see runcfg.h).
 */
#include "runcfg.h"

#include <stdlib.h>
#include <string.h>

#include "parse.h"

void cli_cfg_init(struct cli_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->clean_env = -1;
}

void cli_list_free(struct cli_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

void cli_cfg_free(struct cli_cfg *c)
{
	cli_list_free(&c->read);
	cli_list_free(&c->write);
	cli_list_free(&c->deny);
	cli_list_free(&c->env);
	cli_list_free(&c->extra_allow);
	cli_list_free(&c->argv);
	for (size_t i = 0; i < c->ops.n; i++)
		free(c->ops.v[i].arg);
	free(c->ops.v);
	free(c->cwd);
	free(c->name);
	cli_cfg_init(c);
}

int cli_list_add(struct cli_list *l, const char *s)
{
	char *dup = strdup(s);
	char **nv = dup ? realloc(l->v, (l->n + 1) * sizeof(*nv)) : NULL;
	if (!nv) {
		free(dup);
		return -1;
	}
	l->v = nv;
	l->v[l->n++] = dup;
	return 0;
}

int cli_ops_add(struct cli_ops *o, int id, const char *arg)
{
	char *dup = arg ? strdup(arg) : NULL;
	struct cli_op *nv = (arg && !dup) ? NULL : realloc(o->v, (o->n + 1) * sizeof(*nv));
	if (!nv) {
		free(dup);
		return -1;
	}
	o->v = nv;
	o->v[o->n++] = (struct cli_op){ id, dup };
	return 0;
}

static int ops_cat(struct cli_ops *out, const struct cli_ops *a, const struct cli_ops *b)
{
	for (size_t i = 0; i < a->n; i++)
		if (cli_ops_add(out, a->v[i].id, a->v[i].arg) < 0)
			return -1;
	for (size_t i = 0; i < b->n; i++)
		if (cli_ops_add(out, b->v[i].id, b->v[i].arg) < 0)
			return -1;
	return 0;
}

int cli_env_add(struct cli_list *env, const char *kv, const char **why)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		*why = "expected K=V";
		return -1;
	}
	if (cli_list_add(env, kv) < 0) {
		*why = "out of memory";
		return -1;
	}
	return 0;
}

static int list_cat(struct cli_list *out, const struct cli_list *a, const struct cli_list *b)
{
	for (size_t i = 0; i < a->n; i++)
		if (cli_list_add(out, a->v[i]) < 0)
			return -1;
	for (size_t i = 0; i < b->n; i++)
		if (cli_list_add(out, b->v[i]) < 0)
			return -1;
	return 0;
}

int cli_cfg_merge(struct cli_cfg *out, const struct cli_cfg *pr, const struct cli_cfg *fl)
{
	cli_cfg_init(out);
	if (list_cat(&out->read, &pr->read, &fl->read) < 0 ||
	    list_cat(&out->write, &pr->write, &fl->write) < 0 ||
	    list_cat(&out->deny, &pr->deny, &fl->deny) < 0 ||
	    list_cat(&out->env, &pr->env, &fl->env) < 0 ||
	    list_cat(&out->extra_allow, &pr->extra_allow, &fl->extra_allow) < 0 ||
	    ops_cat(&out->ops, &pr->ops, &fl->ops) < 0)
		return -1;
	/* The command line's command replaces the profile's, never extends it. */
	const struct cli_list *argv = fl->argv.n ? &fl->argv : &pr->argv;
	struct cli_list none = { 0 };
	if (list_cat(&out->argv, argv, &none) < 0)
		return -1;
	const char *cwd = fl->cwd ? fl->cwd : pr->cwd;
	if (cwd && !(out->cwd = strdup(cwd)))
		return -1;
	const char *name = fl->name ? fl->name : pr->name;
	if (name && !(out->name = strdup(name)))
		return -1;
	out->clean_env = fl->clean_env >= 0 ? fl->clean_env : pr->clean_env;
#define PICK(has, field)                                                   \
	do {                                                               \
		const struct cli_cfg *src = fl->has ? fl : pr;             \
		out->has = src->has;                                       \
		out->field = src->field;                                   \
	} while (0)
	PICK(has_max_memory, max_memory);
	PICK(has_max_processes, max_processes);
	PICK(has_timeout, timeout_ms);
	PICK(has_kill_after, kill_after_ms);
	PICK(has_random_seed, random_seed);
	PICK(has_time_start, time_start_ns);
#undef PICK
	return 0;
}

void cli_cfg_apply(const struct cli_cfg *c, sandlock_builder_t *b)
{
	for (size_t i = 0; i < c->read.n; i++)
		sandlock_sandbox_builder_fs_read(b, c->read.v[i]);
	for (size_t i = 0; i < c->write.n; i++)
		sandlock_sandbox_builder_fs_write(b, c->write.v[i]);
	for (size_t i = 0; i < c->deny.n; i++)
		sandlock_sandbox_builder_fs_deny(b, c->deny.v[i]);
	if (c->cwd)
		sandlock_sandbox_builder_cwd(b, c->cwd);
	if (c->name)
		sandlock_sandbox_builder_name(b, c->name);
	if (c->clean_env > 0)
		sandlock_sandbox_builder_clean_env(b, true);
	for (size_t i = 0; i < c->env.n; i++) {
		/* cli_env_add guaranteed a '=' after a non-empty key. */
		char *kv = c->env.v[i];
		char *eq = strchr(kv, '=');
		*eq = '\0';
		sandlock_sandbox_builder_env_var(b, kv, eq + 1);
		*eq = '=';
	}
	/* The library refuses unknown groups and single syscalls at build. */
	for (size_t i = 0; i < c->extra_allow.n; i++)
		sandlock_sandbox_builder_extra_allow_syscalls(b, c->extra_allow.v[i]);
	if (c->has_max_memory)
		sandlock_sandbox_builder_max_memory(b, c->max_memory);
	if (c->has_max_processes)
		sandlock_sandbox_builder_max_processes(b, c->max_processes);
	/* With --kill-after the timeout is SIGTERM first (signals.c); the
	 * library's timeout, kill_after later, is the backstop that ends all. */
	if (c->has_timeout)
		sandlock_sandbox_builder_timeout_ms(
			b, c->timeout_ms + (c->has_kill_after ? c->kill_after_ms : 0));
	if (c->has_random_seed)
		sandlock_sandbox_builder_random_seed(b, c->random_seed);
	if (c->has_time_start)
		sandlock_sandbox_builder_time_start_ns(b, c->time_start_ns);
}
