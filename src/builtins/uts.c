/*
 * uts.c — the sandbox's virtual hostname in uname(2) (cfg->name, default
 * "sandbox-<pid of init>").
 *
 * WHY: the host's name identifies the machine the program runs on; a
 * sandbox has a name of its own.  uname is performed on the caller's
 * behalf (LAST phase: user handlers may still answer it themselves) and
 * only nodename differs from the host's.  /proc/sys/kernel/hostname and
 * /etc/hostname show the same name when they are opened on behalf (this
 * builtin serves them, uts_serve): always with /proc readable, since the
 * /proc view opens everything on behalf.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>

#include "builtins/builtin.h"
#include "opener/served.h"
#include "supervisor/services.h"

struct uts_state {
	char *name; /* cfg->name copy, or NULL: from init's pid */
};

/* The sandbox's name: cfg->name, or "sandbox-<init>". */
static void uts_name(const struct uts_state *s, pid_t init, char *out, size_t cap)
{
	if (s->name)
		snprintf(out, cap, "%s", s->name);
	else
		snprintf(out, cap, "sandbox-%d", (int)init);
}

/* The default name is the host's own in a process without a supervisor;
 * a chosen one cannot be. */
static const char *uts_refusal(const struct sandlock_sandbox *cfg)
{
	return cfg->name ? "name (the virtual hostname and a named sandbox's control socket are "
	                   "served by the supervisor)"
	                 : NULL;
}

static int uts_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	(void)cfg; /* always on: every sandbox has a name */
	return sl_traps_add(out, __NR_uname);
}

static int uts_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                    char **msg)
{
	(void)sv;
	struct uts_state *s = calloc(1, sizeof(*s));
	if (!s || (cfg->name && !(s->name = sl_strdup(cfg->name)))) {
		free(s);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	*state = s;
	return 0;
}

static void uts_free(void *state)
{
	struct uts_state *s = state;
	if (s)
		free(s->name);
	free(s);
}

static bool uts_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct uts_state *s = state;
	struct utsname u;
	if (uname(&u) < 0) {
		sandlock_action_set_errno(act, errno);
		return true;
	}
	memset(u.nodename, 0, sizeof u.nodename);
	uts_name(s, call->init, u.nodename, sizeof u.nodename);
	if (sandlock_mem_poke(call->mem, call->n->args[0], &u, sizeof u) != 0)
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, 0);
	return true;
}

/* The files that hold the host's name hold the sandbox's. */
static int uts_serve(void *state, const struct sl_services *sv, const char *real, pid_t caller,
                     int *fd)
{
	(void)caller;
	if (strcmp(real, "/proc/sys/kernel/hostname") != 0 && strcmp(real, "/etc/hostname") != 0)
		return -1;
	char name[72], line[80];
	uts_name(state, sv->init, name, sizeof name);
	if (!name[0])
		return -1;
	snprintf(line, sizeof line, "%s\n", name);
	return sl_serve_text("hostname", line, fd);
}

const struct sl_builtin sl_builtin_uts = {
	.name = "virtual hostname",
	.refusal = uts_refusal,
	.phase = SL_PHASE_LAST,
	.syscalls = uts_syscalls,
	.init = uts_init,
	.free = uts_free,
	.decide = uts_decide,
	.serve = uts_serve,
};
