/*
 * refabi.c — the reference header's calls whose shape differs from ours:
 * sandlock_run / _run_with_handlers / _run_interactive_with_handlers
 * (a per-run name, registrations by
 * syscall number, no error out-parameters), sandlock_handle_wait /
 * _wait_timeout and sandlock_confine, each over our own call.
 */
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "run/result.h"
#include "ref/refabi.h"
#include "util.h"

/* The bytes a name may have: a hostname's (uts.c, the reference's 64). */
#define NAME_MAX_BYTES 64

/*
 * policy under another name for one synchronous run: a shallow copy whose
 * name points at the caller's string.  Only the name differs; everything
 * else is shared, and the copy lives on the caller's stack for the run.
 */
const sandlock_sandbox_t *sl_named_policy(const sandlock_sandbox_t *policy, const char *name,
                                          sandlock_sandbox_t *copy)
{
	if (!policy || !name)
		return policy;
	size_t n = strlen(name);
	if (n == 0 || n > NAME_MAX_BYTES)
		return NULL;
	*copy = *policy;
	copy->name = (char *)name;
	return copy;
}

SL_EXPORT sandlock_result_t *sandlock_run(const sandlock_sandbox_t *policy, const char *name,
                                          const char *const *argv, unsigned int argc)
{
	sandlock_sandbox_t copy;
	const sandlock_sandbox_t *sb = sl_named_policy(policy, name, &copy);
	return sb ? sandlock_run_err(sb, argv, argc, NULL, NULL) : NULL;
}

/* Free each distinct handler of regs once (a run refused before start). */
static void free_handlers(const sandlock_handler_registration_t *regs, uintptr_t n)
{
	for (uintptr_t i = 0; regs && i < n; i++) {
		bool seen = false;
		for (uintptr_t j = 0; j < i && !seen; j++)
			seen = regs[j].handler == regs[i].handler;
		if (!seen)
			sandlock_handler_free(regs[i].handler);
	}
}

/* run_with_handlers, on the caller's stdio when interactive. */
static sandlock_result_t *run_handlers(const sandlock_sandbox_t *policy, const char *name,
                                       const char *const *argv, uint32_t argc,
                                       const sandlock_handler_registration_t *registrations,
                                       uintptr_t nregistrations, bool interactive)
{
	sandlock_sandbox_t copy;
	const sandlock_sandbox_t *sb = sl_named_policy(policy, name, &copy);
	if (sb && interactive) {
		if (sb != &copy)
			copy = *sb;
		copy.inherit_stdio = true;
		sb = &copy;
	}
	sandlock_registration_t *regs = calloc(nregistrations ? nregistrations : 1, sizeof(*regs));
	char **names = calloc(nregistrations ? nregistrations : 1, sizeof(*names));
	bool ok = sb && regs && names && (registrations || nregistrations == 0);
	/* Our registrations name the syscall: the native arch's name of nr. */
	for (uintptr_t i = 0; ok && i < nregistrations; i++) {
		int64_t nr = registrations[i].syscall_nr;
		names[i] = nr >= 0 && nr <= INT32_MAX
		               ? seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr)
		               : NULL;
		ok = names[i] != NULL;
		regs[i] = (sandlock_registration_t){ names[i], registrations[i].handler };
	}
	sandlock_result_t *r = NULL;
	if (ok)
		r = sandlock_run_with_handlers_err(sb, argv, argc, regs, nregistrations, NULL, NULL);
	else
		free_handlers(registrations, nregistrations); /* owned from entry, as ours */
	for (uintptr_t i = 0; names && i < nregistrations; i++)
		free(names[i]);
	free(names);
	free(regs);
	return r;
}

SL_EXPORT sandlock_result_t *
sandlock_run_with_handlers(const sandlock_sandbox_t *policy, const char *name,
                           const char *const *argv, uint32_t argc,
                           const sandlock_handler_registration_t *registrations,
                           uintptr_t nregistrations)
{
	return run_handlers(policy, name, argv, argc, registrations, nregistrations, false);
}

SL_EXPORT sandlock_result_t *sandlock_run_interactive_with_handlers(
    const sandlock_sandbox_t *policy, const char *name, const char *const *argv, uint32_t argc,
    const sandlock_handler_registration_t *registrations, uintptr_t nregistrations)
{
	return run_handlers(policy, name, argv, argc, registrations, nregistrations, true);
}

SL_EXPORT sandlock_result_t *sandlock_handle_wait(sandlock_handle_t *h)
{
	return sandlock_handle_wait_ms(h, -1, NULL, NULL);
}

SL_EXPORT sandlock_result_t *sandlock_handle_wait_timeout(sandlock_handle_t *h,
                                                          uint64_t timeout_ms)
{
	if (timeout_ms == 0)
		return sandlock_handle_wait(h);
	int err = 0;
	int64_t ms = timeout_ms > INT64_MAX ? INT64_MAX : (int64_t)timeout_ms;
	sandlock_result_t *r = sandlock_handle_wait_ms(h, ms, &err, NULL);
	if (r || err != SANDLOCK_ERR_RUNNING)
		return r;
	/* Still running at the deadline: end it, and say why it ended. */
	(void)sandlock_handle_kill(h);
	r = sandlock_handle_wait(h);
	if (r) {
		r->reason = SANDLOCK_EXIT_TIMEOUT;
		r->exit_code = 124;
		r->signal = 0;
	}
	return r;
}

SL_EXPORT int sandlock_confine(const sandlock_sandbox_t *policy)
{
	return sandlock_confine_err(policy, NULL, NULL);
}

/* ---------------- policy_fn with the reference's callback ---------------- */

struct ref_policy {
	sandlock_policy_fn_t cb;
	void *ud;
	void (*drop)(void *);
};

void *sl_ref_policy_new(sandlock_policy_fn_t cb, void *ud, void (*drop)(void *))
{
	struct ref_policy *p = malloc(sizeof(*p));
	if (p)
		*p = (struct ref_policy){ cb, ud, drop };
	return p;
}

void sl_ref_policy_free(void *adapter)
{
	struct ref_policy *p = adapter;
	if (p && p->drop)
		p->drop(p->ud);
	free(p);
}

/* The reference numbers its categories; ours are words. */
static uint8_t category_number(const char *c)
{
	if (!c)
		return 0;
	return strcmp(c, "network") == 0   ? 1
	       : strcmp(c, "process") == 0 ? 2
	       : strcmp(c, "memory") == 0  ? 3
	                                   : 0;
}

int32_t sl_ref_policy_call(void *adapter, const sandlock_policy_event_t *ev,
                           sandlock_policy_ctx_t *ctx)
{
	struct ref_policy *p = adapter;
	sandlock_event_t e = {
		.syscall = ev->syscall,
		.category = category_number(ev->category),
		.pid = (uint32_t)ev->pid,
		.parent_pid = (uint32_t)ev->parent_pid,
		.host = ev->host,
		.port = ev->port,
		.denied = ev->denied,
		.argv = ev->argv,
		.argc = ev->argc > UINT32_MAX ? UINT32_MAX : (uint32_t)ev->argc,
	};
	return p->cb(&e, ctx, p->ud);
}

/* ---------------- child memory, the reference's accessors ---------------- */

/* The handle is const in the reference's signatures; ours caches the
 * child's memory fd in it, which is not part of what the caller sees. */
static sandlock_mem_t *mem_of(const sandlock_mem_handle_t *h)
{
	return (sandlock_mem_t *)(uintptr_t)h;
}

SL_EXPORT int32_t sandlock_mem_read(const sandlock_mem_handle_t *handle, uint64_t addr,
                                    uint8_t *buf, uintptr_t len, uintptr_t *out_len)
{
	if (!handle || (!buf && len) || !out_len)
		return -1;
	if (sandlock_mem_peek(mem_of(handle), addr, buf, len) != 0)
		return -1;
	*out_len = len;
	return 0;
}

SL_EXPORT int32_t sandlock_mem_read_cstr(const sandlock_mem_handle_t *handle, uint64_t addr,
                                         uint8_t *buf, uintptr_t max_len, uintptr_t *out_len)
{
	if (!handle || !buf || max_len < 1 || !out_len)
		return -1;
	char *s = sandlock_mem_read_string(mem_of(handle), addr, max_len);
	if (!s)
		return -1; /* unreadable, or no NUL within max_len: never a cut string */
	size_t n = strlen(s);
	memcpy(buf, s, n + 1);
	*out_len = n;
	sandlock_string_free(s);
	return 0;
}

SL_EXPORT int32_t sandlock_mem_write(const sandlock_mem_handle_t *handle, uint64_t addr,
                                     const uint8_t *buf, uintptr_t len)
{
	if (!handle || (!buf && len))
		return -1;
	return sandlock_mem_poke(mem_of(handle), addr, buf, len) == 0 ? 0 : -1;
}
