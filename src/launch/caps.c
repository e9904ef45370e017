/*
 * caps.c — the sandboxed child gives up every capability.
 *
 * WHY: a sandbox started by root would otherwise keep all capabilities,
 * and several of them act outside what Landlock and the seccomp blocklist
 * see: CAP_NET_ADMIN (routes and firewall over netlink), CAP_SYS_TIME
 * (clock_adjtime/adjtimex), CAP_CHOWN/CAP_FOWNER/CAP_DAC_OVERRIDE (the
 * kernel's file permission checks), CAP_MKNOD, CAP_SYS_CHROOT, ...
 *
 * Order: bounding set (so no later execve can bring a capability back),
 * ambient set, then capset() to zero (effective, permitted, inheritable).
 * Together with NO_NEW_PRIVS (set before this) an execve — even of a
 * setuid-root or file-capability binary, even as uid 0 — yields no
 * capability.
 *
 * Runs in the forked child before exec: raw syscalls only, no allocation,
 * async-signal-safe.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/caps.h"
#include "util.h"

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#endif
#ifndef PR_CAP_AMBIENT_CLEAR_ALL
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

/*
 * Drop c from the bounding set.  0 = done; 2 = unknown to this kernel
 * (capability numbers are contiguous, so all higher ones are unknown too);
 * 1 = we lack CAP_SETPCAP (the unprivileged case: nothing to lose there,
 * and NO_NEW_PRIVS already keeps execve from granting anything beyond the
 * permitted set, which capset() empties); -errno on a real failure.
 */
static int bset_drop(int c)
{
	if (syscall(SYS_prctl, PR_CAPBSET_DROP, c, 0, 0, 0) == 0)
		return 0;
	if (errno == EINVAL) /* a capability number this kernel does not know */
		return 2;
	if (errno == EPERM)
		return 1;
	return -errno;
}

int sl_caps_drop(void)
{
	for (int c = 0; c < 64; c++) {
		int rc = bset_drop(c);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break; /* no CAP_SETPCAP: the rest would fail the same way */
		if (rc == 2)
			break; /* past CAP_LAST_CAP */
	}
	/* Ambient capabilities survive execve of unprivileged binaries. */
	if (syscall(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 &&
	    errno != EINVAL) /* EINVAL: kernel without ambient capabilities */
		return -errno;
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
}

int sl_caps_lower(struct sl_caps_saved *sv)
{
	sv->lowered = false;
	sv->h.version = _LINUX_CAPABILITY_VERSION_3;
	sv->h.pid = 0;
	if (syscall(SYS_capget, &sv->h, sv->d) < 0)
		return -1;
	if (!sv->d[0].effective && !sv->d[1].effective)
		return 0; /* the usual unprivileged case: nothing to do */
	struct __user_cap_data_struct low[2] = { sv->d[0], sv->d[1] };
	low[0].effective = low[1].effective = 0;
	if (syscall(SYS_capset, &sv->h, low) < 0)
		return -1;
	sv->lowered = true;
	return 0;
}

void sl_caps_restore(struct sl_caps_saved *sv)
{
	if (sv->lowered && syscall(SYS_capset, &sv->h, sv->d) < 0)
		sl_warn("cannot restore the supervisor's capabilities: %s", strerror(errno));
}
