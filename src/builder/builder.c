/*
 * builder.c — the chainable configuration builder: its life (new, free,
 * the release of a configuration), the first-error rule, and the
 * filesystem and process setters.  The other setters are in
 * buildernet.c and builderknobs.c; build.c checks and resolves it all.
 *
 * Builder calls only record raw values (and the first error seen); all
 * path resolution and cross-option checks happen in sandlock_sandbox_build
 * so the reported error is deterministic and the builder never half-fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/builder.h"
#include "builder/image.h"
#include "cow/cowstore.h"
#include "launch/filter.h"
#include "launch/launch.h"
#include "launch/tmpdir.h"

#define SL_DEFAULT_DEFERRED_TIMEOUT_MS 30000

/* Remember only the first error: later ones are usually consequences. */
void sl_b_error(sandlock_builder_t *b, int code, const char *fmt, const char *arg)
{
	if (b->err)
		return;
	b->err = code;
	b->errmsg = sl_asprintf(fmt, arg ? arg : "(null)");
}

void sl_b_oom(sandlock_builder_t *b)
{
	sl_b_error(b, SANDLOCK_ERR_NOMEM, "out of memory%s", "");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_new(void)
{
	sandlock_builder_t *b = calloc(1, sizeof(*b));
	if (b) {
		b->cfg.deferred_timeout_ms = SL_DEFAULT_DEFERRED_TIMEOUT_MS;
		b->cfg.max_processes = SL_DEFAULT_MAX_PROCESSES; /* the reference's default */
		b->cfg.max_output = SANDLOCK_DEFAULT_MAX_OUTPUT;
		b->cfg.on_exit = SANDLOCK_BRANCH_COMMIT;
		b->cfg.on_error = SANDLOCK_BRANCH_ABORT;
		b->cfg.http.log_fd = -1;
	}
	return b;
}

/* Keep a copy of a path option in *slot (resolved at build). */
sandlock_builder_t *sl_b_raw_path(sandlock_builder_t *b, char **slot, const char *path,
                                  const char *what)
{
	if (!b)
		return NULL;
	if (!path || !*path) {
		if (!b->err)
			sl_fail(&b->err, &b->errmsg, SANDLOCK_ERR_INVALID, "%s: empty path", what);
		return b;
	}
	free(*slot);
	*slot = sl_strdup(path);
	if (!*slot && !b->err)
		sl_fail(&b->err, &b->errmsg, SANDLOCK_ERR_NOMEM, "out of memory");
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_image(sandlock_builder_t *b,
                                                             const char *ref)
{
	return sl_b_raw_path(b, b ? &b->raw_image : NULL, ref, "image");
}

SL_EXPORT const char *const *sandlock_sandbox_image_argv(const sandlock_sandbox_t *sb,
                                                        uint32_t *argc)
{
	*argc = sb ? (uint32_t)sb->image_argv.n : 0;
	return sb ? (const char *const *)sb->image_argv.v : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_workdir(sandlock_builder_t *b,
                                                               const char *dir)
{
	return sl_b_raw_path(b, b ? &b->raw_workdir : NULL, dir, "workdir");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_private_tmp(sandlock_builder_t *b,
                                                                   bool on)
{
	if (b)
		b->cfg.private_tmp = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_storage(sandlock_builder_t *b,
                                                                  const char *dir)
{
	return sl_b_raw_path(b, b ? &b->raw_storage : NULL, dir, "fs_storage");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_chroot(sandlock_builder_t *b,
                                                              const char *rootfs)
{
	return sl_b_raw_path(b, b ? &b->raw_chroot : NULL, rootfs, "chroot");
}

static sandlock_builder_t *b_mount(sandlock_builder_t *b, const char *virt, const char *host,
                                   bool ro)
{
	if (!b)
		return NULL;
	if (!virt || !*virt || !host || !*host) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "fs_mount: empty path%s", "");
		return b;
	}
	if (b->n_raw_mounts == SL_MAX_MOUNTS) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "fs_mount '%s': more than 64 mounts", virt);
		return b;
	}
	struct sl_mount *m = &b->raw_mounts[b->n_raw_mounts];
	m->virt = sl_strdup(virt);
	m->host = sl_strdup(host);
	m->ro = ro;
	b->n_raw_mounts++;
	if (!m->virt || !m->host)
		sl_b_oom(b);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_mount(sandlock_builder_t *b,
                                                                const char *virt,
                                                                const char *host)
{
	return b_mount(b, virt, host, false);
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_mount_ro(sandlock_builder_t *b,
                                                                   const char *virt,
                                                                   const char *host)
{
	return b_mount(b, virt, host, true);
}

static sandlock_builder_t *b_action(sandlock_builder_t *b, int *slot, int action,
                                    const char *what)
{
	if (!b)
		return NULL;
	if (action < SANDLOCK_BRANCH_COMMIT || action > SANDLOCK_BRANCH_KEEP) {
		if (!b->err)
			sl_fail(&b->err, &b->errmsg, SANDLOCK_ERR_INVALID,
			        "%s: %d is not a branch action (commit 0, abort 1, keep 2)", what, action);
		return b;
	}
	*slot = action;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_on_exit(sandlock_builder_t *b,
                                                              uint8_t action)
{
	return b_action(b, b ? &b->cfg.on_exit : NULL, action, "on_exit");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_on_error(sandlock_builder_t *b,
                                                               uint8_t action)
{
	return b_action(b, b ? &b->cfg.on_error : NULL, action, "on_error");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_disk(sandlock_builder_t *b,
                                                                uint64_t bytes)
{
	if (b)
		b->cfg.max_disk = bytes;
	return b;
}

/* Common body of fs_read / fs_write / fs_deny (b is not NULL). */
sandlock_builder_t *sl_b_add_path(sandlock_builder_t *b, sl_strvec *v, const char *path,
                                  const char *what)
{
	if (!path || !*path) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "%s: empty path", what);
		return b;
	}
	if (sl_strvec_push(v, path) < 0)
		sl_b_oom(b);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_read(sandlock_builder_t *b,
                                                               const char *path)
{
	if (!b)
		return NULL;
	return sl_b_add_path(b, &b->raw_read, path, "fs_read");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_write(sandlock_builder_t *b,
                                                                const char *path)
{
	if (!b)
		return NULL;
	return sl_b_add_path(b, &b->raw_write, path, "fs_write");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_fs_deny(sandlock_builder_t *b,
                                                               const char *path)
{
	if (!b)
		return NULL;
	return sl_b_add_path(b, &b->raw_deny, path, "fs_deny");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_cwd(sandlock_builder_t *b,
                                                           const char *path)
{
	if (!b)
		return NULL;
	if (!path || !*path) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "cwd: empty path%s", "");
		return b;
	}
	free(b->raw_cwd);
	b->raw_cwd = sl_strdup(path);
	if (!b->raw_cwd)
		sl_b_oom(b);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_name(sandlock_builder_t *b,
                                                            const char *name)
{
	if (!b)
		return NULL;
	/* A hostname: 1..64 bytes (HOST_NAME_MAX), as sethostname takes it. */
	if (!name || !*name || strlen(name) > 64) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "name: must be 1 to 64 bytes, got '%s'",
		           name ? name : "(null)");
		return b;
	}
	free(b->cfg.name);
	b->cfg.name = sl_strdup(name);
	if (!b->cfg.name)
		sl_b_oom(b);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_env_var(sandlock_builder_t *b,
                                                               const char *key,
                                                               const char *value)
{
	if (!b)
		return NULL;
	/* A key with '=' would silently become a different variable. */
	if (!key || !*key || strchr(key, '=')) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "env_var: invalid key '%s'", key);
		return b;
	}
	if (!value) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "env_var: NULL value for '%s'", key);
		return b;
	}
	char *kv = sl_asprintf("%s=%s", key, value);
	if (!kv || sl_strvec_push(&b->cfg.env, kv) < 0)
		sl_b_oom(b);
	free(kv);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_clean_env(sandlock_builder_t *b,
                                                                 bool clean)
{
	if (b)
		b->cfg.clean_env = clean;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_processes(sandlock_builder_t *b,
                                                                     uint32_t n)
{
	if (b) {
		b->cfg.max_processes = n;
		b->cfg.max_processes_set = true;
	}
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_share_budget(sandlock_builder_t *b,
                                                                    int32_t pid)
{
	if (b && pid <= 0)
		sl_b_error(b, SANDLOCK_ERR_INVALID, "share_budget: pid %s is not a process",
		           pid == 0 ? "0" : "< 0");
	else if (b)
		b->cfg.budget_pid = (pid_t)pid;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_max_memory(sandlock_builder_t *b,
                                                                  uint64_t bytes)
{
	if (b)
		b->cfg.max_memory = bytes;
	return b;
}

/* Our default storage, then its owner lock (each run removed its own
 * upper layer; a layer kept on purpose keeps the storage too). */
void sl_b_remove_storage(int lock, const char *path)
{
	sl_store_release(lock, path, SL_STORE_INSIDE);
	rmdir(path);
}

/* Free the members of a configuration (not the struct itself). */
static void cfg_release(struct sandlock_sandbox *c)
{
	sl_strvec_free(&c->fs_read);
	sl_strvec_free(&c->fs_write);
	sl_strvec_free(&c->fs_deny);
	sl_strvec_free(&c->env);
	sl_strvec_free(&c->unix_allow);
	sl_netrules_free(&c->net);
	sl_portranges_free(&c->bind_allow);
	sl_portranges_free(&c->bind_deny);
	sl_httpcfg_free(&c->http);
	free(c->cwd);
	c->cwd = NULL;
	free(c->name);
	if (c->policy_ud_free)
		c->policy_ud_free(c->policy_ud);
	c->name = NULL;
	sl_private_tmp_remove(c->tmp_root); /* each run removed its own */
	c->tmp_root = NULL;
	if (c->storage_owned && c->fs_storage)
		sl_b_remove_storage(c->storage_lock, c->fs_storage);
	free(c->workdir);
	free(c->fs_storage);
	c->workdir = c->fs_storage = NULL;
	free(c->chroot);
	c->chroot = NULL;
	sl_strvec_free(&c->image_argv);
	for (size_t i = 0; i < c->n_mounts; i++) {
		free(c->mounts[i].virt);
		free(c->mounts[i].host);
	}
	c->n_mounts = 0;
}

SL_EXPORT void sandlock_sandbox_builder_free(sandlock_builder_t *b)
{
	if (!b)
		return;
	cfg_release(&b->cfg);
	sl_strvec_free(&b->raw_read);
	sl_strvec_free(&b->raw_write);
	sl_strvec_free(&b->raw_deny);
	sl_strvec_free(&b->raw_unix);
	sl_strvec_free(&b->raw_net_allow);
	sl_strvec_free(&b->raw_net_deny);
	sl_strvec_free(&b->raw_bind_allow);
	sl_strvec_free(&b->raw_bind_deny);
	sl_strvec_free(&b->raw_http_allow);
	sl_strvec_free(&b->raw_http_deny);
	sl_strvec_free(&b->raw_inject_ca);
	sl_strvec_free(&b->raw_creds);
	sl_strvec_free(&b->raw_auth);
	free(b->raw_http_ca);
	free(b->raw_http_key);
	free(b->raw_cwd);
	free(b->raw_workdir);
	free(b->raw_storage);
	free(b->raw_chroot);
	free(b->raw_image);
	for (size_t i = 0; i < b->n_raw_mounts; i++) {
		free(b->raw_mounts[i].virt);
		free(b->raw_mounts[i].host);
	}
	free(b->errmsg);
	free(b);
}

/* A pipeline or gather stage keeps the policy it was given (the
 * reference's "cloned": the caller may free its own at once). */
void sl_sandbox_ref(const sandlock_sandbox_t *sb)
{
	__atomic_add_fetch(&((sandlock_sandbox_t *)(uintptr_t)sb)->refs, 1, __ATOMIC_RELAXED);
}

SL_EXPORT void sandlock_sandbox_free(sandlock_sandbox_t *sb)
{
	if (!sb || __atomic_sub_fetch(&sb->refs, 1, __ATOMIC_ACQ_REL) > 0)
		return;
	cfg_release(sb);
	sl_prog_cache_free(sb->progs);
	free(sb);
}
