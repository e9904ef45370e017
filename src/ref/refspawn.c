/*
 * refspawn.c — the reference header's live-handle and one-shot calls
 * over sandlock_spawn: sandlock_create / _create_for_run / _start,
 * sandlock_popen (per-stream modes, fds out), sandlock_run_interactive,
 * sandlock_handle_port_mappings and sandlock_dry_run with its result.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ref/refabi.h"
#include "util.h"

/*
 * A policy under a per-run name that outlives the call: a shallow copy
 * holding a reference on the original (the caller may free its own at
 * once, as the reference's clone allows) and its own copy of the name.
 */
struct named {
	sandlock_sandbox_t copy;
	const sandlock_sandbox_t *orig;
	char *name;
};

static void named_free(void *arg)
{
	struct named *n = arg;
	sandlock_sandbox_free((sandlock_sandbox_t *)(uintptr_t)n->orig);
	free(n->name);
	free(n);
}

static struct named *named_new(const sandlock_sandbox_t *policy, const char *name)
{
	struct named *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	if (!sl_named_policy(policy, name, &n->copy) || (name && !(n->name = strdup(name)))) {
		free(n);
		return NULL;
	}
	if (!name)
		n->copy = *policy;
	n->copy.name = name ? n->name : policy->name;
	sl_sandbox_ref(policy);
	n->orig = policy;
	return n;
}

/* spawn under name with opts; the copy lives as long as the handle. */
static sandlock_handle_t *spawn_named(const sandlock_sandbox_t *policy, const char *name,
                                      const char *const *argv, unsigned int argc,
                                      const sandlock_spawn_opts_t *opts)
{
	if (!policy || !argv || argc == 0)
		return NULL;
	struct named *n = named_new(policy, name);
	if (!n)
		return NULL;
	sandlock_handle_t *h = sandlock_spawn(&n->copy, argv, argc, NULL, 0, opts, NULL, NULL);
	if (!h) {
		named_free(n);
		return NULL;
	}
	sl_handle_on_free(h, named_free, n);
	return h;
}

/* The command waits before exec until sandlock_start; output captured. */
SL_EXPORT sandlock_handle_t *sandlock_create(const sandlock_sandbox_t *policy, const char *name,
                                             const char *const *argv, unsigned int argc)
{
	sandlock_spawn_opts_t o = { .size = sizeof(o), .flags = SANDLOCK_SPAWN_CREATE };
	return spawn_named(policy, name, argv, argc, &o);
}

/* The reference's single-threaded-runtime variant; every handle of ours
 * has its own I/O thread, so it is sandlock_create. */
SL_EXPORT sandlock_handle_t *sandlock_create_for_run(const sandlock_sandbox_t *policy,
                                                     const char *name,
                                                     const char *const *argv, unsigned int argc)
{
	return sandlock_create(policy, name, argv, argc);
}

SL_EXPORT int sandlock_start(sandlock_handle_t *h)
{
	return sandlock_handle_start(h);
}

/* The reference's StdioMode (0 inherit, 1 piped, 2 null) as ours; -1: unknown. */
static int32_t ref_mode(uint32_t m)
{
	return m == 0 ? SANDLOCK_STDIO_INHERIT
	       : m == 1 ? SANDLOCK_STDIO_PIPE
	       : m == 2 ? SANDLOCK_STDIO_DEVNULL
	                : -1;
}

/* Hand a piped stream's fd to *out, or close it when out is NULL. */
static void give_fd(int fd, int *out)
{
	if (out)
		*out = fd;
	else if (fd >= 0)
		close(fd);
}

SL_EXPORT sandlock_handle_t *sandlock_popen(const sandlock_sandbox_t *policy, const char *name,
                                            const char *const *argv, unsigned int argc,
                                            uint32_t stdin_mode, uint32_t stdout_mode,
                                            uint32_t stderr_mode, int *out_stdin_fd,
                                            int *out_stdout_fd, int *out_stderr_fd)
{
	int *outs[3] = { out_stdin_fd, out_stdout_fd, out_stderr_fd };
	uint32_t modes[3] = { stdin_mode, stdout_mode, stderr_mode };
	sandlock_spawn_opts_t o = { .size = sizeof(o) };
	bool ok = true;
	for (int i = 0; i < 3; i++) {
		if (outs[i])
			*outs[i] = -1;
		o.stdio[i].mode = ref_mode(modes[i]);
		ok &= o.stdio[i].mode >= 0;
	}
	sandlock_handle_t *h = ok ? spawn_named(policy, name, argv, argc, &o) : NULL;
	if (!h)
		return NULL;
	give_fd(modes[0] == 1 ? sandlock_handle_stdin_fd(h) : -1, out_stdin_fd);
	give_fd(modes[1] == 1 ? sandlock_handle_stdout_fd(h) : -1, out_stdout_fd);
	give_fd(modes[2] == 1 ? sandlock_handle_stderr_fd(h) : -1, out_stderr_fd);
	return h;
}

/* The command on the caller's own stdio; its exit code, or -1 when it
 * could not be run. */
SL_EXPORT int sandlock_run_interactive(const sandlock_sandbox_t *policy, const char *name,
                                       const char *const *argv, unsigned int argc)
{
	sandlock_spawn_opts_t o = { .size = sizeof(o) };
	for (int i = 0; i < 3; i++)
		o.stdio[i].mode = SANDLOCK_STDIO_INHERIT;
	sandlock_handle_t *h = spawn_named(policy, name, argv, argc, &o);
	sandlock_result_t *r = sandlock_handle_wait(h);
	int code = r ? sandlock_result_exit_code(r) : -1;
	sandlock_result_free(r);
	sandlock_handle_free(h);
	return code;
}

/* {"80":9001,...}: port_remap's virtual ports bound elsewhere; NULL when
 * none are (or port_remap is off). */
SL_EXPORT char *sandlock_handle_port_mappings(const sandlock_handle_t *h)
{
	enum { MAX_MAPPED = 1024 };
	sandlock_handle_t *m = (sandlock_handle_t *)(uintptr_t)h; /* ours reads under its lock */
	uint16_t virt[MAX_MAPPED], real[MAX_MAPPED];
	int n = h ? sandlock_handle_ports(m, virt, real, MAX_MAPPED) : -1;
	if (n <= 0)
		return NULL;
	size_t cap = (size_t)(n > MAX_MAPPED ? MAX_MAPPED : n) * 16 + 3, len = 0;
	char *s = malloc(cap);
	if (!s)
		return NULL;
	s[len++] = '{';
	for (int i = 0; i < n && i < MAX_MAPPED; i++)
		len += (size_t)snprintf(s + len, cap - len, "%s\"%u\":%u", i ? "," : "", virt[i],
		                        real[i]);
	snprintf(s + len, cap - len, "}");
	return s;
}
