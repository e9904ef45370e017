/*
 * mechs.c — probe once which ways into a sandboxed process we may use
 * (mechs.h).
 *
 * pidfd_getfd is probed on ourselves: ptrace's access rules always let a
 * process reach itself, so a failure there is the seccomp profile (or a
 * kernel before 5.6), never a permission question.  The permission side
 * (Yama) is read from its sysctl: scope 1 lets us reach our descendants,
 * which every sandboxed process is (init is our child and a subreaper).
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "launch/mechs.h"

static struct sl_mechs g_mechs;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int yama_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;
	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static bool has_cap_ptrace(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { { 0, 0, 0 }, { 0, 0, 0 } };
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_SYS_PTRACE / 32].effective & (1u << (CAP_SYS_PTRACE % 32));
}

/* 0 if pidfd_getfd works on ourselves, else its errno. */
static int probe_getfd(void)
{
	int pfd = (int)syscall(__NR_pidfd_open, getpid(), 0);
	if (pfd < 0)
		return errno;
	int dup = (int)syscall(__NR_pidfd_getfd, pfd, pfd, 0);
	int e = dup < 0 ? errno : 0;
	if (dup >= 0)
		close(dup);
	close(pfd);
	return e;
}

static void probe(void)
{
	struct sl_mechs *m = &g_mechs;
	m->yama = yama_scope();
	m->cap_ptrace = has_cap_ptrace();
	m->attach = m->yama < 2 || (m->yama == 2 && m->cap_ptrace);
	m->getfd_errno = probe_getfd();
	m->getfd = m->attach && m->getfd_errno == 0;
}

const struct sl_mechs *sl_mechs(void)
{
	pthread_once(&g_once, probe);
	return &g_mechs;
}

bool sl_mech_getfd(void)
{
	return sl_mechs()->getfd;
}

const char *sl_mech_attach_why(void)
{
	const struct sl_mechs *m = sl_mechs();
	if (m->attach)
		return NULL;
	if (m->yama == 2)
		return "Yama ptrace_scope is 2 and this process lacks CAP_SYS_PTRACE "
		       "(grant the capability, e.g. --cap-add SYS_PTRACE, or set "
		       "kernel.yama.ptrace_scope=1 on the host)";
	return "Yama ptrace_scope is 3: no process may reach another's memory or fds "
	       "until the host reboots with a lower scope";
}

const char *sl_mech_getfd_why(void)
{
	const struct sl_mechs *m = sl_mechs();
	if (!m->attach)
		return sl_mech_attach_why();
	if (m->getfd)
		return NULL;
	if (m->getfd_errno == EPERM || m->getfd_errno == ENOSYS)
		return "pidfd_getfd is refused by this process's seccomp profile (Docker's and "
		       "Kubernetes' default profiles allow it only with CAP_SYS_PTRACE: run the "
		       "container with --cap-add SYS_PTRACE, or a profile that allows pidfd_getfd)";
	return "pidfd_getfd does not work here (Linux 5.6 or later is needed)";
}
