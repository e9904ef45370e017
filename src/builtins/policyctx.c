/*
 * policyctx.c — the policy_fn context's methods (sandlock.h, "Dynamic
 * policy"): what a callback may call while it decides, to tighten the
 * running sandbox (deny_path, restrict/grant_network, kill) and the
 * reference's sandlock_ctx_* calls (max processes, max memory, a
 * process's network).  Apart from policy.c, the builtin that traps the
 * events and applies what these record, because they are the callback's
 * side of the context: they only change its lists and limits.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "builtins/policyctx.h"
#include "run/proctree.h"
#include "util.h"

/* Canonical form of an absolute path that may not exist (yet): realpath of
 * the path, else of its parent + the last component. */
static char *canonical(const char *path)
{
	char *r = realpath(path, NULL);
	if (r)
		return r;
	const char *slash = strrchr(path, '/');
	if (!slash || !slash[1])
		return NULL;
	char *dir = strndup(path, (size_t)(slash - path) + (slash == path));
	char *rd = dir ? realpath(dir, NULL) : NULL;
	free(dir);
	if (!rd)
		return NULL;
	char *out = sl_asprintf("%s%s%s", rd, strcmp(rd, "/") ? "/" : "", slash + 1);
	free(rd);
	return out;
}

SL_EXPORT int32_t sandlock_policy_deny_path(sandlock_policy_ctx_t *ctx, const char *path)
{
	if (!ctx || !path || path[0] != '/')
		return -EINVAL;
	char *canon = canonical(path);
	if (!canon)
		return -ENOENT;
	struct stat sb;
	bool exists = stat(canon, &sb) == 0;
	pthread_mutex_lock(&ctx->mu);
	struct pol_denied *v = realloc(ctx->denied, (ctx->ndenied + 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&ctx->mu);
		free(canon);
		return -ENOMEM;
	}
	ctx->denied = v;
	v[ctx->ndenied].path = canon;
	v[ctx->ndenied].dev = exists ? sb.st_dev : 0;
	v[ctx->ndenied].ino = exists ? sb.st_ino : 0;
	ctx->ndenied++;
	pthread_mutex_unlock(&ctx->mu);
	return 0;
}

SL_EXPORT int32_t sandlock_policy_allow_path(sandlock_policy_ctx_t *ctx, const char *path)
{
	if (!ctx || !path || path[0] != '/')
		return -EINVAL;
	char *canon = canonical(path);
	if (!canon)
		return -ENOENT;
	pthread_mutex_lock(&ctx->mu);
	size_t j = 0;
	for (size_t i = 0; i < ctx->ndenied; i++) {
		if (strcmp(ctx->denied[i].path, canon) == 0)
			free(ctx->denied[i].path);
		else
			ctx->denied[j++] = ctx->denied[i];
	}
	ctx->ndenied = j;
	pthread_mutex_unlock(&ctx->mu);
	free(canon);
	return 0;
}

static int parse_ip(const char *s, struct pol_ip *ip)
{
	memset(ip, 0, sizeof *ip);
	if (s && inet_pton(AF_INET, s, ip->addr) == 1) {
		ip->family = AF_INET;
		return 0;
	}
	if (s && inet_pton(AF_INET6, s, ip->addr) == 1) {
		ip->family = AF_INET6;
		return 0;
	}
	return -EINVAL;
}

bool sl_pol_ip_in(const struct pol_ip *v, size_t n, const struct pol_ip *ip)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].family == ip->family && memcmp(v[i].addr, ip->addr, 16) == 0)
			return true;
	return false;
}

/* Parse all of ips first: a bad entry changes nothing. */
static struct pol_ip *parse_ips(const char *const *ips, size_t n, int32_t *err)
{
	struct pol_ip *v = calloc(n ? n : 1, sizeof(*v));
	*err = v ? 0 : -ENOMEM;
	for (size_t i = 0; v && i < n; i++)
		if (parse_ip(ips[i], &v[i]) < 0) {
			*err = -EINVAL;
			free(v);
			return NULL;
		}
	return v;
}

SL_EXPORT int32_t sandlock_policy_restrict_network(sandlock_policy_ctx_t *ctx,
                                                   const char *const *ips, size_t n)
{
	int32_t err;
	if (!ctx || (n && !ips))
		return -EINVAL;
	struct pol_ip *v = parse_ips(ips, n, &err);
	if (!v)
		return err;
	/* Narrow only: keep what both the old and the new list allow. */
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (!ctx->net_restricted || sl_pol_ip_in(ctx->ips, ctx->nips, &v[i]))
			v[k++] = v[i];
	free(ctx->ips);
	ctx->ips = v;
	ctx->nips = k;
	ctx->net_restricted = true;
	return 0;
}

SL_EXPORT int32_t sandlock_policy_grant_network(sandlock_policy_ctx_t *ctx,
                                                const char *const *ips, size_t n)
{
	int32_t err;
	if (!ctx || (n && !ips))
		return -EINVAL;
	struct pol_ip *add = parse_ips(ips, n, &err);
	if (!add)
		return err;
	if (!ctx->net_restricted) {
		free(add);
		return 0; /* nothing restricted: the static rules alone decide */
	}
	struct pol_ip *v = realloc(ctx->ips, (ctx->nips + n + 1) * sizeof(*v));
	if (!v) {
		free(add);
		return -ENOMEM;
	}
	ctx->ips = v;
	for (size_t i = 0; i < n; i++)
		if (!sl_pol_ip_in(ctx->ips, ctx->nips, &add[i]))
			ctx->ips[ctx->nips++] = add[i];
	free(add);
	return 0;
}

SL_EXPORT void sandlock_policy_kill(sandlock_policy_ctx_t *ctx)
{
	if (ctx)
		ctx->kill = true;
}

/* ---------------- the reference's context calls ---------------- */

SL_EXPORT void sandlock_ctx_restrict_network(sandlock_ctx_t *ctx, const char *const *ips,
                                             uint32_t count)
{
	(void)sandlock_policy_restrict_network(ctx, ips, count);
}

SL_EXPORT void sandlock_ctx_grant_network(sandlock_ctx_t *ctx, const char *const *ips,
                                          uint32_t count)
{
	(void)sandlock_policy_grant_network(ctx, ips, count);
}

SL_EXPORT void sandlock_ctx_deny_path(sandlock_ctx_t *ctx, const char *path)
{
	(void)sandlock_policy_deny_path(ctx, path);
}

SL_EXPORT void sandlock_ctx_allow_path(sandlock_ctx_t *ctx, const char *path)
{
	(void)sandlock_policy_allow_path(ctx, path);
}

SL_EXPORT void sandlock_ctx_restrict_max_processes(sandlock_ctx_t *ctx, uint32_t n)
{
	/* Checked on each fork after the callback (pol_decide); procs.c still
	 * holds the configured limit, so the tighter of the two applies. */
	if (ctx && n && (!ctx->max_procs || n < ctx->max_procs))
		ctx->max_procs = n;
}

/* The v2 cgroup directory of pid (heap), or NULL. */
static char *cgroup_dir(pid_t pid)
{
	char path[48], line[4096];
	snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(path, "re");
	char *dir = NULL;
	while (f && !dir && fgets(line, sizeof line, f))
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			dir = sl_asprintf("/sys/fs/cgroup%s", line + 3);
		}
	if (f)
		fclose(f);
	return dir;
}

/* Lower memory.max of the run's cgroup to bytes.  0, or -1 when the run
 * has no memory cgroup of its own (or it cannot be written). */
static int lower_memory_max(pid_t init, uint64_t bytes)
{
	char *dir = cgroup_dir(init);
	char *file = dir ? sl_asprintf("%s/memory.max", dir) : NULL;
	free(dir);
	int rc = -1;
	FILE *f = file ? fopen(file, "re") : NULL;
	char cur[32] = "";
	if (f && fgets(cur, sizeof cur, f)) {
		unsigned long long now = strncmp(cur, "max", 3) == 0 ? ULLONG_MAX : strtoull(cur, NULL, 10);
		rc = 0;
		if (bytes < now) {
			FILE *w = fopen(file, "we");
			rc = w && fprintf(w, "%llu\n", (unsigned long long)bytes) > 0 ? 0 : -1;
			if (w && fclose(w) != 0)
				rc = -1;
		}
	}
	if (f)
		fclose(f);
	free(file);
	return rc;
}

/* No memory cgroup: RLIMIT_AS of every process of the sandbox, lowered. */
static void lower_address_space(pid_t init, uint64_t bytes)
{
	struct sl_proc v[512];
	int n = sl_tree_list(init, v, sizeof v / sizeof v[0]);
	for (int i = 0; i < n; i++) {
		struct rlimit cur;
		if (prlimit(v[i].pid, RLIMIT_AS, NULL, &cur) < 0)
			continue;
		struct rlimit rl = { cur.rlim_cur, cur.rlim_max };
		if (rl.rlim_cur > bytes)
			rl.rlim_cur = bytes;
		if (rl.rlim_max > bytes)
			rl.rlim_max = bytes;
		(void)prlimit(v[i].pid, RLIMIT_AS, &rl, NULL);
	}
}

SL_EXPORT void sandlock_ctx_restrict_max_memory(sandlock_ctx_t *ctx, uint64_t bytes)
{
	if (!ctx || !bytes || (ctx->max_memory && bytes >= ctx->max_memory) || ctx->init <= 0)
		return;
	ctx->max_memory = bytes;
	if (lower_memory_max(ctx->init, bytes) < 0)
		lower_address_space(ctx->init, bytes);
}

SL_EXPORT void sandlock_ctx_restrict_pid_network(sandlock_ctx_t *ctx, uint32_t pid,
                                                 const char *const *ips, uint32_t count)
{
	int32_t err;
	if (!ctx || !pid || (count && !ips))
		return;
	struct pol_ip *v = parse_ips(ips, count, &err);
	if (!v)
		return;
	struct pol_pidnet *e = NULL;
	for (size_t i = 0; i < ctx->npidnets && !e; i++)
		if (ctx->pidnets[i].pid == (pid_t)pid)
			e = &ctx->pidnets[i];
	if (e) { /* narrow only: what both lists allow */
		size_t k = 0;
		for (uint32_t i = 0; i < count; i++)
			if (sl_pol_ip_in(e->ips, e->n, &v[i]))
				v[k++] = v[i];
		free(e->ips);
		e->ips = v;
		e->n = k;
		return;
	}
	struct pol_pidnet *grown = realloc(ctx->pidnets, (ctx->npidnets + 1) * sizeof(*grown));
	if (!grown) {
		free(v);
		return;
	}
	ctx->pidnets = grown;
	ctx->pidnets[ctx->npidnets++] = (struct pol_pidnet){ (pid_t)pid, v, count };
}
