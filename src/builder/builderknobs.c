/*
 * builderknobs.c — the builder's setters for output and time, random
 * seed, syscall groups, resource knobs, protections and the callbacks
 * (on_start, on_decision, policy_fn).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builder.h"
#include "launch/filter.h"
#include "ref/refabi.h"

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_timeout_ms(sandlock_builder_t *b,
                                                                  uint64_t ms)
{
	if (b)
		b->cfg.timeout_ms = ms;
	return b;
}

SL_EXPORT sandlock_builder_t *
sandlock_sandbox_builder_deferred_timeout_ms(sandlock_builder_t *b, uint64_t ms)
{
	if (b)
		b->cfg.deferred_timeout_ms = ms;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_output(sandlock_builder_t *b,
                                                                  uint64_t bytes)
{
	if (b)
		b->cfg.max_output = bytes;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_inherit_stdio(sandlock_builder_t *b,
                                                                     bool inherit)
{
	if (b)
		b->cfg.inherit_stdio = inherit;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_random_seed(sandlock_builder_t *b,
                                                                   uint64_t seed)
{
	if (b) {
		b->cfg.has_random_seed = true;
		b->cfg.random_seed = seed;
	}
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_time_start_ns(sandlock_builder_t *b,
                                                                     int64_t unix_ns)
{
	if (!b)
		return NULL;
	if (unix_ns < 0) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "time_start: before 1970-01-01T00:00:00Z%s", "");
		return b;
	}
	b->cfg.has_time_start = true;
	b->cfg.time_start_ns = unix_ns;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_time_start(sandlock_builder_t *b,
                                                                  uint64_t epoch_secs)
{
	if (b && epoch_secs > (uint64_t)INT64_MAX / 1000000000u) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "time_start: %s seconds is past year 2262", "epoch_secs");
		return b;
	}
	return sandlock_sandbox_builder_time_start_ns(b, (int64_t)epoch_secs * 1000000000);
}

/*
 * Re-allow a syscall group the filter blocks by default.  Groups only: a
 * single syscall cannot be re-allowed (a half-open group is a policy
 * nobody reviewed), and an unknown name is an error, never ignored.
 */
/*
 * Each name of a comma-separated list (the reference's "names"), given
 * to one(b, name); an empty name (",,", a trailing comma) is an error
 * naming the list.
 */
static sandlock_builder_t *each_name(sandlock_builder_t *b, const char *list, const char *what,
                                     sandlock_builder_t *(*one)(sandlock_builder_t *,
                                                                const char *))
{
	if (!b)
		return NULL;
	if (!list || !strchr(list, ','))
		return one(b, list);
	for (const char *p = list;; p++) {
		size_t len = strcspn(p, ",");
		char *name = len ? strndup(p, len) : NULL;
		if (!len)
			sl_b_error(b, SANDLOCK_ERR_INVALID, what, list);
		else if (!name)
			sl_b_oom(b);
		else
			one(b, name);
		free(name);
		p += len;
		if (!*p)
			return b;
	}
}

static sandlock_builder_t *allow_group(sandlock_builder_t *b, const char *group)
{
	if (!group || !*group) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "extra_allow_syscalls: empty or NULL group%s", "");
		return b;
	}
	bool is_syscall = false;
	uint32_t bit = sl_filter_group(group, &is_syscall);
	if (bit) {
		b->cfg.filter.groups |= bit;
		return b;
	}
	char *why = sl_asprintf(is_syscall ? "extra_allow_syscalls: '%%s' is a single syscall; "
	                                     "only groups can be allowed (groups: %s)"
	                                   : "extra_allow_syscalls: unknown syscall group '%%s' "
	                                     "(groups: %s)",
	                        sl_filter_group_names());
	if (!why) {
		sl_b_oom(b);
		return b;
	}
	sl_b_error(b, SANDLOCK_ERR_INVALID, why, group);
	free(why);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_extra_allow_syscalls(sandlock_builder_t *b,
                                                                            const char *names)
{
	return each_name(b, names, "extra_allow_syscalls: an empty group in '%s'", allow_group);
}

/* ---------------- knobs ---------------- */

static void b_error_num(sandlock_builder_t *b, const char *fmt, uint64_t v)
{
	char num[24];
	snprintf(num, sizeof num, "%llu", (unsigned long long)v);
	sl_b_error(b, SANDLOCK_ERR_INVALID, fmt, num);
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_open_files(sandlock_builder_t *b,
                                                                      unsigned int n)
{
	if (!b)
		return NULL;
	if (n == 0)
		sl_b_error(b, SANDLOCK_ERR_INVALID, "max_open_files must be >= 1%s", "");
	else
		b->cfg.max_open_files = n;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_cpu(sandlock_builder_t *b,
                                                               uint8_t percent)
{
	if (!b)
		return NULL;
	if (percent < 1 || percent > 100)
		b_error_num(b, "max_cpu must be a percentage of one core, 1..100, got %s", percent);
	else
		b->cfg.max_cpu = percent;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_cpu_core(sandlock_builder_t *b,
                                                                uint32_t core)
{
	if (!b)
		return NULL;
	if (core >= SL_MAX_CORES)
		b_error_num(b, "cpu_cores: core %s out of range (max 1023)", core);
	else
		b->cfg.cpu_cores[core / 64] |= 1ull << (core % 64);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_cpu_cores(sandlock_builder_t *b,
                                                                 const uint32_t *cores,
                                                                 uint32_t len)
{
	if (b && !cores && len)
		b_error_num(b, "cpu_cores: a NULL list of %s cores", len);
	for (uint32_t i = 0; b && cores && i < len; i++)
		(void)sandlock_sandbox_builder_cpu_core(b, cores[i]);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_no_coredump(sandlock_builder_t *b, bool on)
{
	if (b)
		b->cfg.no_coredump = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_no_huge_pages(sandlock_builder_t *b,
                                                                     bool on)
{
	if (b)
		b->cfg.no_huge_pages = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_no_randomize_memory(sandlock_builder_t *b,
                                                                           bool on)
{
	if (b)
		b->cfg.no_randomize_memory = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_num_cpus(sandlock_builder_t *b, uint32_t n)
{
	if (!b)
		return NULL;
	if (n == 0 || n > SL_MAX_CORES)
		b_error_num(b, "num_cpus: %s out of range (1-1024)", n);
	else
		b->cfg.num_cpus = n;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_gpu_devices(sandlock_builder_t *b,
                                                                   const uint32_t *devices,
                                                                   uint32_t len)
{
	if (!b)
		return NULL;
	if (len > SL_MAX_GPUS || (len && !devices)) {
		b_error_num(b, "gpu_devices: at most 64 indices, got %s", len);
		return b;
	}
	b->cfg.gpu_on = true;
	b->cfg.n_gpus = 0;
	for (uint32_t i = 0; i < len; i++) {
		if (devices[i] > 255) {
			b_error_num(b, "gpu_devices: GPU index %s out of range (0-255)", devices[i]);
			return b;
		}
		b->cfg.gpus[b->cfg.n_gpus++] = devices[i];
	}
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_deterministic_dirs(sandlock_builder_t *b,
                                                                          bool on)
{
	if (b)
		b->cfg.deterministic_dirs = on;
	return b;
}

static void b_deny_nr(sandlock_builder_t *b, int nr)
{
	for (size_t i = 0; i < b->cfg.n_extra_deny; i++)
		if (b->cfg.extra_deny[i] == nr)
			return;
	if (b->cfg.n_extra_deny >= SL_MAX_EXTRA_DENY)
		sl_b_error(b, SANDLOCK_ERR_INVALID, "extra_deny_syscalls: too many syscalls (max 128)%s",
		           "");
	else
		b->cfg.extra_deny[b->cfg.n_extra_deny++] = nr;
}

/* A group (filter.c's table) expands to its members; else one syscall. */
static sandlock_builder_t *deny_name(sandlock_builder_t *b, const char *name)
{
	if (!name || !*name) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "extra_deny_syscalls: empty or NULL name%s", "");
		return b;
	}
	const int *nrs;
	size_t n;
	if (sl_filter_group_members(name, &nrs, &n) == 0) {
		for (size_t i = 0; i < n; i++)
			b_deny_nr(b, nrs[i]);
		return b;
	}
	int64_t nr = sandlock_syscall_nr(name);
	if (nr < 0)
		sl_b_error(b, SANDLOCK_ERR_SYSCALL,
		           "extra_deny_syscalls: '%s' is neither a syscall nor a syscall group", name);
	else
		b_deny_nr(b, (int)nr);
	return b;
}

/* Names or groups, comma-separated as the reference takes them. */
SL_EXPORT sandlock_builder_t *
sandlock_sandbox_builder_extra_deny_syscalls(sandlock_builder_t *b, const char *names)
{
	return each_name(b, names, "extra_deny_syscalls: an empty name in '%s'", deny_name);
}

static sandlock_builder_t *b_protection(sandlock_builder_t *b, uint32_t p, uint8_t mode,
                                        const char *what)
{
	if (!b)
		return NULL;
	if (p >= SANDLOCK_PROTECTION_COUNT)
		sl_b_error(b, SANDLOCK_ERR_INVALID, "%s: unknown protection", what);
	else
		b->cfg.protection[p] = mode;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_allow_degraded(sandlock_builder_t *b,
                                                                      uint32_t protection)
{
	return b_protection(b, protection, SL_PROT_DEGRADED, "allow_degraded");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_disable(sandlock_builder_t *b,
                                                               uint32_t protection)
{
	return b_protection(b, protection, SL_PROT_DISABLED, "disable");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_on_start(sandlock_builder_t *b,
                                                                sandlock_start_fn fn, void *ud)
{
	if (b) {
		b->cfg.on_start = fn;
		b->cfg.on_start_ud = fn ? ud : NULL;
	}
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_on_decision(sandlock_builder_t *b,
                                                                   sandlock_decision_fn fn,
                                                                   void *ud)
{
	if (b) {
		b->cfg.on_decision = fn;
		b->cfg.on_decision_ud = fn ? ud : NULL;
	}
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_report_filter_refusals(sandlock_builder_t *b,
                                                                             bool on)
{
	if (b)
		b->cfg.filter.report_refusals = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_audit_denials(sandlock_builder_t *b,
                                                                     bool on)
{
	if (b)
		b->cfg.audit_denials = on;
	return b;
}

/* fn and ud, and what frees ud once the configuration is released. */
static sandlock_builder_t *set_policy(sandlock_builder_t *b, sandlock_policy_fn fn, void *ud,
                                      void (*ud_free)(void *))
{
	if (!b)
		return NULL;
	if (b->cfg.policy_ud_free)
		b->cfg.policy_ud_free(b->cfg.policy_ud);
	b->cfg.policy_fn = fn;
	b->cfg.policy_ud = fn ? ud : NULL;
	b->cfg.policy_ud_free = fn ? ud_free : NULL;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_policy_callback(sandlock_builder_t *b,
                                                                       sandlock_policy_fn fn,
                                                                       void *ud)
{
	return set_policy(b, fn, ud, NULL);
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_policy_fn(sandlock_builder_t *b,
                                                                 sandlock_policy_fn_t cb,
                                                                 void *user_data,
                                                                 void (*user_data_drop)(void *))
{
	if (!b)
		return NULL;
	if (!cb)
		return set_policy(b, NULL, NULL, NULL);
	void *adapter = sl_ref_policy_new(cb, user_data, user_data_drop);
	if (!adapter) {
		sl_b_error(b, SANDLOCK_ERR_NOMEM, "out of memory%s", "");
		if (user_data_drop)
			user_data_drop(user_data);
		return b;
	}
	return set_policy(b, sl_ref_policy_call, adapter, sl_ref_policy_free);
}
