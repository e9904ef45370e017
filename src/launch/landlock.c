/*
 * landlock.c — build the Landlock ruleset (before fork) and apply it
 * (in the child, raw syscalls only).
 *
 * Landlock is allow-only.  fs_deny is implemented by *not* granting the
 * allowed root that contains the denied path and instead granting every
 * sibling along the way down to it ("carve-out").  Consequences, by
 * design fail-closed: entries created later in those intermediate
 * directories are inaccessible, and the intermediate directories
 * themselves cannot be listed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/devmin.h"
#include "builder/gpu.h"
#include "launch/landlock.h"
#include "launch/llrule.h"

#define FS(x) LANDLOCK_ACCESS_FS_##x
#define SL_READ_RIGHTS (FS(EXECUTE) | FS(READ_FILE) | FS(READ_DIR))
/*
 * MAKE_CHAR and MAKE_BLOCK are handled but never granted, even in writable
 * trees: a device node made there (by a sandbox started as root) would be
 * a way to the raw disk or kernel memory that bypasses every path rule.
 */
#define SL_WRITE_RIGHTS                                                                     \
	(SL_READ_RIGHTS | FS(WRITE_FILE) | FS(REMOVE_DIR) | FS(REMOVE_FILE) | FS(MAKE_DIR) |   \
	 FS(MAKE_REG) | FS(MAKE_SOCK) | FS(MAKE_FIFO) | FS(MAKE_SYM) | FS(REFER) | FS(TRUNCATE))

static atomic_int g_kernel_abi = -3; /* -3 = not probed yet */

/* Test hook (hidden: not exported from the .so); 0 = no cap. */
int sl_landlock_abi_cap;

/* The kernel's answer is cached; the cap is applied on every call. */
int sl_landlock_abi(void)
{
	int abi = atomic_load(&g_kernel_abi);
	if (abi == -3) {
		long v = syscall(__NR_landlock_create_ruleset, NULL, 0,
		                 LANDLOCK_CREATE_RULESET_VERSION);
		abi = v < 0 ? -1 : (int)v;
		atomic_store(&g_kernel_abi, abi);
	}
	int cap = sl_landlock_abi_cap;
	return (abi >= 1 && cap > 0 && cap < abi) ? cap : abi;
}

/* Every filesystem right the given ABI knows about (all of them are handled). */
static uint64_t fs_handled(int abi)
{
	uint64_t m = FS(EXECUTE) | FS(WRITE_FILE) | FS(READ_FILE) | FS(READ_DIR) | FS(REMOVE_DIR) |
	             FS(REMOVE_FILE) | FS(MAKE_CHAR) | FS(MAKE_DIR) | FS(MAKE_REG) |
	             FS(MAKE_SOCK) | FS(MAKE_FIFO) | FS(MAKE_BLOCK) | FS(MAKE_SYM);
	if (abi >= 2)
		m |= FS(REFER);
	if (abi >= 3)
		m |= FS(TRUNCATE);
	if (abi >= 5)
		m |= FS(IOCTL_DEV);
	return m;
}

/* Size of struct landlock_ruleset_attr as known by that ABI. */
static size_t attr_size(int abi)
{
	if (abi >= 6)
		return 24;
	if (abi >= 4)
		return 16;
	return 8;
}

/*
 * Grant rights beneath path.  Symlinks are skipped on purpose: a rule on
 * the link's target could reach outside the allowed root.
 */
static int add_path_rule(int ruleset, const char *path, uint64_t rights, bool follow, int *err,
                         char **msg)
{
	int fd = open(path, O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0) {
		if (!follow) /* entry vanished or unreadable: nothing to grant */
			return 0;
		return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "landlock: cannot open '%s': %s", path,
		               strerror(errno));
	}
	struct stat st;
	int rc = fstat(fd, &st);
	if (rc == 0 && S_ISLNK(st.st_mode)) {
		close(fd);
		return 0;
	}
	rc = rc < 0 ? -errno : sl_landlock_add_fd_rule(ruleset, fd, rights, S_ISDIR(st.st_mode));
	close(fd);
	if (rc < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_add_rule('%s'): %s", path,
		               strerror(-rc));
	return 0;
}

/* True if canonical p is strictly below canonical dir. */
static bool strictly_below(const char *p, const char *dir)
{
	if (strcmp(dir, "/") == 0)
		return p[0] == '/' && p[1] != '\0';
	size_t n = strlen(dir);
	return strncmp(p, dir, n) == 0 && p[n] == '/';
}

/* Does any denied path equal p (exact) / lie strictly below p (below)? */
static void deny_relation(const sl_strvec *deny, const char *p, bool *exact, bool *below)
{
	*exact = *below = false;
	for (size_t i = 0; i < deny->n; i++) {
		if (strcmp(deny->v[i], p) == 0)
			*exact = true;
		else if (strictly_below(deny->v[i], p))
			*below = true;
	}
}

static int grant_tree(int ruleset, const char *path, uint64_t rights, const sl_strvec *deny,
                      bool follow, int *err, char **msg);

/* Grant every entry of dir except denied ones, recursing towards denied paths. */
static int carve_dir(int ruleset, const char *dir, uint64_t rights, const sl_strvec *deny,
                     int *err, char **msg)
{
	DIR *d = opendir(dir);
	if (!d)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock: cannot list '%s': %s", dir,
		               strerror(errno));
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *child = sl_asprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, e->d_name);
		if (!child) {
			rc = sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
			break;
		}
		rc = grant_tree(ruleset, child, rights, deny, false, err, msg);
		free(child);
	}
	closedir(d);
	return rc;
}

/* Grant path, unless it is denied; carve around denied paths beneath it. */
static int grant_tree(int ruleset, const char *path, uint64_t rights, const sl_strvec *deny,
                      bool follow, int *err, char **msg)
{
	bool exact, below;
	deny_relation(deny, path, &exact, &below);
	if (exact)
		return 0;
	if (!below)
		return add_path_rule(ruleset, path, rights, follow, err, msg);
	return carve_dir(ruleset, path, rights, deny, err, msg);
}

static int add_fs_rules(int ruleset, const struct sandlock_sandbox *cfg, uint64_t handled,
                        int *err, char **msg)
{
	for (size_t i = 0; i < cfg->fs_read.n; i++)
		if (grant_tree(ruleset, cfg->fs_read.v[i], SL_READ_RIGHTS & handled, &cfg->fs_deny,
		               true, err, msg) < 0)
			return -1;
	for (size_t i = 0; i < cfg->fs_write.n; i++)
		if (grant_tree(ruleset, cfg->fs_write.v[i], SL_WRITE_RIGHTS & handled, &cfg->fs_deny,
		               true, err, msg) < 0)
			return -1;
	return 0;
}

static int add_port_rules(int ruleset, const uint16_t *ports, size_t n, uint64_t access,
                          int *err, char **msg)
{
	for (size_t i = 0; i < n; i++) {
		struct sl_ll_net_port_attr np = { .allowed_access = access, .port = ports[i] };
		if (syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_NET_PORT, &np, 0) < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_add_rule(port %u): %s",
			               ports[i], strerror(errno));
	}
	return 0;
}

/* ---------------- protections ---------------- */

static const struct {
	const char *name;
	int abi; /* the Landlock ABI that brought it */
} k_prot[SANDLOCK_PROTECTION_COUNT] = {
	[SANDLOCK_PROTECTION_FS_REFER] = { "fs_refer", 2 },
	[SANDLOCK_PROTECTION_FS_TRUNCATE] = { "fs_truncate", 3 },
	[SANDLOCK_PROTECTION_NET_TCP] = { "net_tcp", 4 },
	[SANDLOCK_PROTECTION_FS_IOCTL_DEV] = { "fs_ioctl_dev", 5 },
	[SANDLOCK_PROTECTION_SIGNAL_SCOPE] = { "signal_scope", 6 },
	[SANDLOCK_PROTECTION_ABSTRACT_UNIX_SOCKET_SCOPE] = { "abstract_unix_socket_scope", 6 },
};

SL_EXPORT const char *sandlock_protection_name(uint32_t p)
{
	return p < SANDLOCK_PROTECTION_COUNT ? k_prot[p].name : NULL;
}

SL_EXPORT uint32_t sandlock_protection_min_abi(uint32_t p)
{
	return p < SANDLOCK_PROTECTION_COUNT ? (uint32_t)k_prot[p].abi : 0;
}

SL_EXPORT int sandlock_min_landlock_abi(void)
{
	return 6; /* every protection of the table */
}

/* Status of p under cfg at this ABI (SANDLOCK_PROTECTION_ACTIVE...). */
static int prot_status(const struct sandlock_sandbox *cfg, uint32_t p, int abi)
{
	if (cfg->protection[p] == SL_PROT_DISABLED)
		return SANDLOCK_PROTECTION_DISABLED;
	if (abi >= k_prot[p].abi)
		return SANDLOCK_PROTECTION_ACTIVE;
	return cfg->protection[p] == SL_PROT_DEGRADED ? SANDLOCK_PROTECTION_DEGRADED
	                                              : SANDLOCK_PROTECTION_UNAVAILABLE;
}

static bool prot_on(const struct sandlock_sandbox *cfg, uint32_t p, int abi)
{
	return prot_status(cfg, p, abi) == SANDLOCK_PROTECTION_ACTIVE;
}

SL_EXPORT int sandlock_sandbox_protection_status(const sandlock_sandbox_t *sb, uint32_t p)
{
	if (!sb || p >= SANDLOCK_PROTECTION_COUNT)
		return -1;
	return prot_status(sb, p, sl_landlock_abi());
}

/* LANDLOCK_SCOPE_* bits cfg gets on this kernel (protections resolved). */
static uint64_t scopes(const struct sandlock_sandbox *cfg)
{
	int abi = sl_landlock_abi();
	uint64_t s = 0;
	if (prot_on(cfg, SANDLOCK_PROTECTION_SIGNAL_SCOPE, abi))
		s |= LANDLOCK_SCOPE_SIGNAL;
	if (prot_on(cfg, SANDLOCK_PROTECTION_ABSTRACT_UNIX_SOCKET_SCOPE, abi))
		s |= LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
	return s;
}

/*
 * The strict default: a protection this kernel cannot give refuses the
 * run, unless the caller allowed it to be degraded (or disabled it).
 */
static int check_strict(const struct sandlock_sandbox *cfg, int abi, int *err, char **msg)
{
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++)
		if (prot_status(cfg, p, abi) == SANDLOCK_PROTECTION_UNAVAILABLE)
			return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
			               "Landlock ABI %d cannot enforce %s (needs ABI %d); refusing to "
			               "run without it (allow_degraded or disable it to run anyway)",
			               abi, k_prot[p].name, k_prot[p].abi);
	return 0;
}

/* The filesystem rights handled under cfg at this ABI. */
static uint64_t fs_handled_cfg(const struct sandlock_sandbox *cfg, int abi)
{
	uint64_t m = fs_handled(abi);
	if (!prot_on(cfg, SANDLOCK_PROTECTION_FS_REFER, abi))
		m &= ~FS(REFER);
	if (!prot_on(cfg, SANDLOCK_PROTECTION_FS_TRUNCATE, abi))
		m &= ~FS(TRUNCATE);
	if (!prot_on(cfg, SANDLOCK_PROTECTION_FS_IOCTL_DEV, abi))
		m &= ~FS(IOCTL_DEV);
	return m;
}

/* Landlock handles TCP bind unless every port is allowed or a deny list
 * (checked on behalf by builtins/netdest/) is in force. */
static bool ll_bind(const struct sandlock_sandbox *cfg)
{
	return !cfg->bind_allow.all && cfg->bind_deny.n == 0 && !cfg->bind_deny.all;
}

#define SL_MAX_BIND_RULES 4096 /* ports of all net_allow_bind ranges together */

static int add_bind_rules(int ruleset, const struct sl_portranges *p, int *err, char **msg)
{
	size_t total = 0;
	for (size_t i = 0; i < p->n; i++)
		total += (size_t)(p->v[i].hi - p->v[i].lo) + 1;
	if (total > SL_MAX_BIND_RULES)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "net_allow_bind: %zu ports is too many (max %d; use '*')", total,
		               SL_MAX_BIND_RULES);
	for (size_t i = 0; i < p->n; i++)
		for (uint32_t port = p->v[i].lo; port <= p->v[i].hi; port++) {
			uint16_t one = (uint16_t)port;
			if (add_port_rules(ruleset, &one, 1, LANDLOCK_ACCESS_NET_BIND_TCP, err, msg) < 0)
				return -1;
		}
	return 0;
}

int sl_landlock_prepare(const struct sandlock_sandbox *cfg, int *err, char **msg)
{
	int abi = sl_landlock_abi();
	if (abi < 1)
		return -2;
	if (check_strict(cfg, abi, err, msg) < 0)
		return -1;
	uint64_t handled = fs_handled_cfg(cfg, abi);
	bool net = prot_on(cfg, SANDLOCK_PROTECTION_NET_TCP, abi);
	struct sl_ll_ruleset_attr attr = { .handled_access_fs = handled };
	if (net)
		attr.handled_access_net = (ll_bind(cfg) ? LANDLOCK_ACCESS_NET_BIND_TCP : 0) |
		                          (cfg->ll_connect ? LANDLOCK_ACCESS_NET_CONNECT_TCP : 0);
	attr.scoped = scopes(cfg);
	int rs = (int)syscall(__NR_landlock_create_ruleset, &attr, attr_size(abi), 0);
	if (rs < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_create_ruleset: %s",
		               strerror(errno));
	int rc = add_fs_rules(rs, cfg, handled, err, msg);
	if (rc == 0 && !cfg->chroot)
		rc = sl_devmin_grant(rs, handled, err, msg);
	if (rc == 0)
		rc = sl_gpu_grant(rs, handled, cfg, err, msg);
	if (rc == 0 && net && cfg->ll_connect)
		rc = add_port_rules(rs, cfg->net_connect, cfg->n_net_connect,
		                    LANDLOCK_ACCESS_NET_CONNECT_TCP, err, msg);
	if (rc == 0 && net && ll_bind(cfg))
		rc = add_bind_rules(rs, &cfg->bind_allow, err, msg);
	if (rc < 0) {
		close(rs);
		return -1;
	}
	return rs;
}

int sl_landlock_grant_read(int ruleset_fd, const struct sandlock_sandbox *cfg, const char *dir,
                           char **msg)
{
	int abi = sl_landlock_abi();
	if (abi < 1)
		return 0;
	return add_path_rule(ruleset_fd, dir, SL_READ_RIGHTS & fs_handled_cfg(cfg, abi), true, NULL,
	                     msg);
}

uint64_t sl_landlock_handled(const struct sandlock_sandbox *cfg)
{
	int abi = sl_landlock_abi();
	return abi < 1 ? 0 : fs_handled_cfg(cfg, abi);
}

int sl_landlock_apply(int ruleset_fd, unsigned flags)
{
	if (syscall(__NR_landlock_restrict_self, ruleset_fd, flags) < 0)
		return -errno;
	return 0;
}
