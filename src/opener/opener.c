/*
 * opener.c — the on-behalf opener (see opener.h for why).
 *
 * THE THREAD.  One per run, started before the listener is served.  It
 * unshares its fs_struct (its own umask), sets NO_NEW_PRIVS on itself,
 * applies the sandbox's Landlock ruleset with landlock_restrict_self
 * (which confines only the calling thread) and drops every capability
 * (capset is per thread): the supervisor may be root with
 * CAP_DAC_OVERRIDE while the sandboxed program dropped everything
 * (caps.c).  From then on it can open exactly what the program could,
 * with the same DAC checks.  It performs one openat2 per request.
 *
 * A REQUEST (sl_opener_open_call, on the supervisor thread or a deferred
 * worker):
 *   1. decode the call: flags and mode as the kernel would take them
 *      (open/openat mask unknown flags; openat2's struct open_how is read
 *      once and checked like copy_struct_from_user);
 *   2. read the path once; /proc/self, /proc/thread-self, /dev/fd,
 *      /dev/std{in,out,err}, /proc/mounts and /etc/mtab name the caller,
 *      not us: they are rewritten to /proc/TID, and a reopen of the caller's own fd (/proc/TID/fd/N) is
 *      done through our pidfd_getfd duplicate of it;
 *   3. for a create, or when our ids are not all equal (ids_fixed), read
 *      /proc/TID/status: the caller must act with our uid/gid (else EPERM:
 *      DAC would differ), and its umask applies to O_CREAT;
 *   4. the starting point: our duplicate of its cwd or dirfd (childfd.h),
 *      so a relative path resolves where the caller's would;
 *   5. the opener thread opens it, always with RESOLVE_NO_MAGICLINKS
 *      added: a magic link followed in *our* process would name our fds;
 *   6. confirm the notification is still pending, and refuse anything
 *      that landed in our own /proc/PID (a symlink to /proc/self resolves
 *      to the supervisor here): our memory, environment or fds must never
 *      reach the program;
 *   7. report the real path (/proc/self/fd/N) and device/inode.
 *
 * Blocking opens: the open is done with O_NONBLOCK (cleared afterwards
 * unless asked for), so a FIFO without a peer never stalls the opener
 * (and with it every trapped call).  The difference the program sees: a
 * FIFO opened for reading returns at once, for writing without a reader
 * it fails with ENXIO.  O_NOCTTY is always added: a terminal must never
 * become the supervisor's controlling terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "paths/chroot.h"
#include "supervisor/childmem.h"
#include "compat.h"
#include "launch/mechs.h"
#include "opener/procpolicy.h"
#include "opener/opener.h"
#include "syscalls.h"
#include "net/portmap.h"
#include "util.h"
#include "opener/virtfiles.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* The kernel's VALID_OPEN_FLAGS (include/linux/fcntl.h): open/openat
 * silently drop anything else, openat2 refuses it. */
#define K_VALID_OPEN_FLAGS                                                              \
	(O_RDONLY | O_WRONLY | O_RDWR | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |  \
	 O_NDELAY | O_DSYNC | FASYNC | O_DIRECT | O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW | \
	 O_NOATIME | O_CLOEXEC | O_PATH | __O_TMPFILE | O_SYNC)
#define K_O_PATH_FLAGS (O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC)
#define OPEN_HOW_SIZE_VER0 24
#define OPEN_HOW_SIZE_MAX 4096 /* the kernel refuses larger (PAGE_SIZE) */

/* ---------------- the thread ---------------- */

struct req {
	int base;            /* AT_FDCWD or our fd */
	const char *path;
	struct open_how how;
	bool set_umask;
	mode_t umask;
	bool local;          /* performed by the calling thread (local_self) */
	/* A bind instead of an open (sl_opener_bind_socket): sock to addr, from cwd. */
	bool bind;
	int sock, cwd;
	const struct sockaddr *addr;
	socklen_t alen;
	int fd, err;         /* the answer */
	bool done;           /* under mu: fd, err are final */
};

struct sl_opener {
	pthread_t thread;
	bool started;
	pthread_mutex_t call_lock; /* one request at a time */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct req *req;     /* pending request, NULL when idle */
	bool ready, stop;
	int setup_err;       /* 0 once confined */
	int ruleset_fd;      /* only until the thread is confined */
	int taskdir;         /* /proc/self/task: which tids are ours */
	int listener;        /* bound listener, -1 */
	bool fixed_ids;      /* real = effective = saved ids: the caller's are ours */
	bool proc_guard;     /* /proc readable: sl_proc_policy on every open */
	bool proc_fast;      /* the caller's own /proc/TID opened here, see local_self */
	pid_t init;          /* the sandbox's init, for sl_proc_policy */
	int procfd;          /* /proc, for sl_proc_policy; -1 */
	char hostname[72];   /* served for the hostname files; "" = not */
	struct sl_virt *virt; /* synthetic views (virtfiles.h), owned; NULL */
	char *hosts;         /* served for /etc/hosts (hosts_dev/ino); NULL = not */
	struct sl_portmap *ports; /* port_remap: /proc/net/tcp{,6} show virtual ports */
	dev_t hosts_dev;
	ino_t hosts_ino;
	/* http_inject_ca: trust bundles (by identity) served with the proxy's
	 * CA certificate appended; the real files are untouched. */
	struct { dev_t dev; ino_t ino; } bundles[16];
	size_t nbundles;
	char *ca_pem;
	const struct sl_view *view; /* virtual chroot: paths are guest paths; NULL */
};

/*
 * True when our real, effective and saved uids (and gids) are all equal.
 * The sandboxed program inherited them and has no capabilities, so it can
 * then never act as anyone else (setresuid/setfsuid without CAP_SETUID may
 * only pick one of the current ids): its ids need no per-call check.
 */
static bool ids_fixed(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) < 0 || getresgid(&gr, &ge, &gs) < 0)
		return false;
	return r == e && e == s && gr == ge && ge == gs;
}

/* Confine the calling thread: own umask, the ruleset, no capabilities. */
static int confine_self(int ruleset_fd)
{
	if (unshare(CLONE_FS) < 0)
		return errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return errno;
	if (ruleset_fd < 0)
		return EPERM; /* never an unconfined opener */
	if (syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0)
		return errno;
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		return errno;
	return 0;
}

/* bind(2) from the caller's cwd (this thread's own: unshared), then
 * back home. */
static void perform_bind(struct req *r, int home)
{
	umask(r->umask);
	int rc = fchdir(r->cwd) < 0 ? -1 : bind(r->sock, r->addr, r->alen);
	r->err = rc < 0 ? (errno ? errno : EIO) : 0;
	if (fchdir(home) < 0)
		sl_warn("opener: cannot go back to its directory: %s", strerror(errno));
}

static void perform(struct req *r)
{
	if (r->set_umask)
		umask(r->umask);
	int fd = (int)syscall(SYS_openat2, r->base, r->path, &r->how, sizeof r->how);
	r->fd = fd;
	r->err = fd < 0 ? (errno ? errno : EIO) : 0;
}

static void *opener_main(void *arg)
{
	struct sl_opener *op = arg;
	int e = confine_self(op->ruleset_fd);
	/* Above the stdio numbers: a caller with fd 0-2 closed must not
	 * have them taken (the launch fills them with /dev/null). */
	int home = e ? -1 : sl_fd_high(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (!e && home < 0)
		e = errno;
	pthread_mutex_lock(&op->mu);
	op->setup_err = e;
	op->ready = true;
	pthread_cond_broadcast(&op->cv);
	while (!e) {
		while (!op->req && !op->stop)
			pthread_cond_wait(&op->cv, &op->mu);
		if (op->stop)
			break;
		struct req *r = op->req;
		op->req = NULL;
		pthread_mutex_unlock(&op->mu);
		if (r->bind)
			perform_bind(r, home);
		else
			perform(r);
		pthread_mutex_lock(&op->mu);
		r->done = true;
		pthread_cond_broadcast(&op->cv);
	}
	pthread_mutex_unlock(&op->mu);
	if (home >= 0)
		close(home);
	return NULL;
}

/* Hand r to the thread and wait for the answer.  (Spinning instead of
 * sleeping was measured slower on a loaded 2-core machine: the spinner
 * takes the core the other side needs.) */
static void submit(struct sl_opener *op, struct req *r)
{
	pthread_mutex_lock(&op->call_lock);
	pthread_mutex_lock(&op->mu);
	r->done = false;
	op->req = r;
	pthread_cond_broadcast(&op->cv);
	while (!r->done)
		pthread_cond_wait(&op->cv, &op->mu);
	pthread_mutex_unlock(&op->mu);
	pthread_mutex_unlock(&op->call_lock);
}

static void stop_thread(struct sl_opener *op)
{
	if (!op->started)
		return;
	pthread_mutex_lock(&op->mu);
	op->stop = true;
	pthread_cond_broadcast(&op->cv);
	pthread_mutex_unlock(&op->mu);
	pthread_join(op->thread, NULL);
	op->started = false;
}

static void opener_destroy(struct sl_opener *op)
{
	stop_thread(op);
	if (op->taskdir >= 0)
		close(op->taskdir);
	if (op->procfd >= 0)
		close(op->procfd);
	sl_virt_free(op->virt);
	pthread_cond_destroy(&op->cv);
	pthread_mutex_destroy(&op->mu);
	pthread_mutex_destroy(&op->call_lock);
	free(op->hosts);
	free(op->ca_pem);
	free(op);
}

struct sl_opener *sl_opener_new(int ruleset_fd, int *err, char **msg)
{
	struct sl_opener *op = calloc(1, sizeof(*op));
	if (!op) {
		sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&op->call_lock, NULL);
	pthread_mutex_init(&op->mu, NULL);
	pthread_cond_init(&op->cv, NULL);
	op->listener = -1;
	op->procfd = -1;
	op->ruleset_fd = ruleset_fd;
	op->fixed_ids = ids_fixed();
	op->taskdir = sl_fd_high(open("/proc/self/task", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (op->taskdir < 0) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "opener: /proc/self/task: %s",
		        strerror(errno));
		opener_destroy(op);
		return NULL;
	}
	/* No signal of the caller's may run on the opener. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&op->thread, NULL, opener_main, op);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "opener thread: %s", strerror(rc));
		opener_destroy(op);
		return NULL;
	}
	op->started = true;
	pthread_mutex_lock(&op->mu);
	while (!op->ready)
		pthread_cond_wait(&op->cv, &op->mu);
	int e = op->setup_err;
	pthread_mutex_unlock(&op->mu);
	op->ruleset_fd = -1;
	if (e) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		        "opener: cannot confine the on-behalf opener thread: %s", strerror(e));
		opener_destroy(op);
		return NULL;
	}
	return op;
}

void sl_opener_guard_proc(struct sl_opener *op, pid_t init, bool fast_self)
{
	op->procfd = sl_fd_high(open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
	op->init = init;
	op->proc_fast = fast_self && op->procfd >= 0;
	op->proc_guard = true; /* without procfd every /proc open is refused */
}

void sl_opener_set_hostname(struct sl_opener *op, const char *name)
{
	snprintf(op->hostname, sizeof op->hostname, "%s", name);
}

void sl_opener_set_virt(struct sl_opener *op, struct sl_virt *v)
{
	sl_virt_free(op->virt);
	op->virt = v;
}

int sl_opener_set_hosts(struct sl_opener *op, const char *text)
{
	if (!text)
		return 0;
	struct stat st;
	if (!(op->hosts = sl_strdup(text)))
		return -1;
	/* The file the guest would open: its identity, not its spelling.  No
	 * /etc/hosts at all: nothing to serve, nothing of the host's to see. */
	if (stat("/etc/hosts", &st) < 0) {
		op->hosts_dev = 0;
		op->hosts_ino = 0;
		return errno == ENOENT ? 0 : -1;
	}
	op->hosts_dev = st.st_dev;
	op->hosts_ino = st.st_ino;
	return 0;
}

int sl_opener_set_cabundles(struct sl_opener *op, const sl_strvec *paths, const char *pem)
{
	if (!(op->ca_pem = sl_strdup(pem)))
		return -1;
	for (size_t i = 0; i < paths->n && op->nbundles < 16; i++) {
		struct stat st;
		if (stat(paths->v[i], &st) < 0)
			return -1;
		op->bundles[op->nbundles].dev = st.st_dev;
		op->bundles[op->nbundles++].ino = st.st_ino;
	}
	return 0;
}

void sl_opener_set_ports(struct sl_opener *op, struct sl_portmap *map)
{
	op->ports = map;
}

void sl_opener_set_view(struct sl_opener *op, const struct sl_view *v)
{
	op->view = v;
}

/* ---------------- finding a run's opener ---------------- */

#define MAX_BOUND 64 /* concurrent runs in one process */

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_opener *g_reg[MAX_BOUND];

int sl_opener_bind(struct sl_opener *op, int listener)
{
	int rc = -1;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND; i++)
		if (!g_reg[i]) {
			g_reg[i] = op;
			op->listener = listener;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&g_reg_mu);
	return rc;
}

struct sl_opener *sl_opener_find(int listener)
{
	struct sl_opener *op = NULL;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND && !op; i++)
		if (g_reg[i] && g_reg[i]->listener == listener)
			op = g_reg[i];
	pthread_mutex_unlock(&g_reg_mu);
	return op;
}

void sl_opener_free(struct sl_opener *op)
{
	if (!op)
		return;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND; i++)
		if (g_reg[i] == op)
			g_reg[i] = NULL;
	pthread_mutex_unlock(&g_reg_mu);
	opener_destroy(op);
}

/* ---------------- decoding the call ---------------- */

struct open_call {
	int dirfd;
	uint64_t path;
	struct open_how how;
};

/* open/openat/creat: what build_open_how makes of (flags, mode). */
static void legacy_how(struct open_how *how, uint64_t flags, uint64_t mode)
{
	how->flags = flags & K_VALID_OPEN_FLAGS;
	if (how->flags & O_PATH)
		how->flags &= K_O_PATH_FLAGS;
	how->mode = (how->flags & (O_CREAT | __O_TMPFILE)) ? (mode & 07777) : 0;
	how->resolve = 0;
}

/* openat2's struct open_how, read once, sized like copy_struct_from_user. */
static int read_how(sandlock_mem_t *m, uint64_t addr, uint64_t size, struct open_how *how)
{
	if (size < OPEN_HOW_SIZE_VER0)
		return EINVAL;
	if (size > OPEN_HOW_SIZE_MAX)
		return E2BIG;
	unsigned char buf[OPEN_HOW_SIZE_MAX];
	if (sandlock_mem_peek(m, addr, buf, (size_t)size) != 0)
		return EFAULT;
	memset(how, 0, sizeof(*how));
	size_t k = size < sizeof(*how) ? (size_t)size : sizeof(*how);
	memcpy(how, buf, k);
	for (size_t i = k; i < size; i++)
		if (buf[i])
			return E2BIG;
	return 0;
}

static int decode(const sandlock_notif_t *n, sandlock_mem_t *m, struct open_call *c)
{
	const uint64_t *a = n->args;
	memset(c, 0, sizeof(*c));
	switch (n->syscall_nr) {
#ifdef __NR_open
	case __NR_open:
		c->dirfd = AT_FDCWD;
		c->path = a[0];
		legacy_how(&c->how, a[1], a[2]);
		return 0;
	case __NR_creat:
		c->dirfd = AT_FDCWD;
		c->path = a[0];
		legacy_how(&c->how, O_CREAT | O_WRONLY | O_TRUNC, a[1]);
		return 0;
#endif
	case __NR_openat:
		c->dirfd = (int)(uint32_t)a[0];
		c->path = a[1];
		legacy_how(&c->how, a[2], a[3]);
		return 0;
	case __NR_openat2:
		c->dirfd = (int)(uint32_t)a[0];
		c->path = a[1];
		return read_how(m, a[2], a[3], &c->how);
	default:
		return EINVAL;
	}
}

/* ---------------- the path ---------------- */

/* /etc/mtab is normally a link to the mount table of "self": followed
 * here it would name the supervisor, so it is spelled /proc/self/mounts
 * (when it is such a link; the guest's own table, filtered, is opened). */
static bool rewrite_mtab(char *p)
{
	char t[64];
	ssize_t n = strcmp(p, "/etc/mtab") == 0 ? readlink(p, t, sizeof t - 1) : -1;
	if (n <= 0)
		return false;
	t[n] = '\0';
	if (strcmp(t, "/proc/mounts") != 0 && strcmp(t, "../proc/mounts") != 0 &&
	    strcmp(t, "/proc/self/mounts") != 0 && strcmp(t, "../proc/self/mounts") != 0)
		return false;
	strcpy(p, "/proc/self/mounts");
	return true;
}

/* The path argument, read once and rewritten (childfd.h; /etc/mtab
 * first).  NULL with *e on failure. */
static char *read_path(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n, int *e)
{
	char *q = sl_child_read_path(m, addr, n, e);
	if (q && rewrite_mtab(q)) {
		int r = sl_child_self_path(q, SL_CHILD_PATH_CAP, n);
		if (r < 0) {
			free(q);
			*e = -r;
			return NULL;
		}
	}
	return q;
}

/* N if p is exactly /proc/TID/fd/N (a reopen of the caller's own fd), else -1. */
static int own_fd_reopen(const char *p, unsigned tid)
{
	char pre[40];
	int k = snprintf(pre, sizeof pre, "/proc/%u/fd/", tid);
	if (strncmp(p, pre, (size_t)k) != 0 || !p[k])
		return -1;
	long v = 0;
	for (const char *s = p + k; *s; s++) {
		if (*s < '0' || *s > '9' || v > INT_MAX / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= INT_MAX ? (int)v : -1;
}

/* ---------------- the caller ---------------- */

/* "Key: a b c d" of /proc/TID/status: the eff and fs ids (2nd and 4th). */
static bool parse_ids(const char *st, const char *key, unsigned long *eff, unsigned long *fs)
{
	const char *l = strstr(st, key);
	unsigned long r, s;
	return l && sscanf(l + strlen(key), "%lu %lu %lu %lu", &r, eff, &s, fs) == 4;
}

/* Check the caller acts with our ids (then DAC treats the opener as it
 * would the caller) and take its umask.  0 or an errno. */
static int caller_creds(int piddir, mode_t *umask_out)
{
	char buf[4096];
	if (sl_read_small_at(piddir, "status", buf, sizeof buf) < 0)
		return ESRCH;
	unsigned long eu, fu, eg, fg;
	if (!parse_ids(buf, "\nUid:", &eu, &fu) || !parse_ids(buf, "\nGid:", &eg, &fg))
		return EPERM;
	unsigned long me = geteuid(), mg = getegid();
	if (eu != me || fu != me || eg != mg || fg != mg)
		return EPERM; /* fail closed: the opener cannot act as another user */
	const char *u = strstr(buf, "\nUmask:");
	unsigned long um;
	if (!u || sscanf(u + 7, "%lo", &um) != 1)
		return EPERM;
	*umask_out = (mode_t)(um & 0777);
	return 0;
}

/* ---------------- after the open ---------------- */

static bool on_procfs(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC; /* unknown: treat as */
}

/* True if fd is a file of our own /proc/PID (or /proc/PID/task/TID). */
static bool in_our_proc(const struct sl_opener *op, int fd, const char *real)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return true; /* cannot tell: refuse */
	if (sf.f_type != PROC_SUPER_MAGIC)
		return false;
	if (strncmp(real, "/proc/", 6) != 0)
		return false; /* /proc mounted elsewhere would need its own check */
	char num[16];
	size_t i = 0;
	for (const char *s = real + 6; *s >= '0' && *s <= '9'; s++)
		if (i < sizeof num - 1)
			num[i++] = *s;
	num[i] = 0;
	return i > 0 && faccessat(op->taskdir, num, F_OK, 0) == 0;
}

/* Real path, device and inode of our fd; the checks of step 6. */
static int describe(const struct sl_opener *op, int fd, sandlock_opened_t *out)
{
	char link[32], real[PATH_MAX + 1];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, real, sizeof real - 1);
	if (len < 0)
		return EPERM;
	real[len] = 0;
	if (in_our_proc(op, fd, real))
		return EACCES; /* the supervisor's own /proc is never the caller's */
	if (op->proc_guard && on_procfs(fd)) {
		int e = op->procfd >= 0 ? sl_proc_policy(op->procfd, op->init, real) : EACCES;
		if (e)
			return e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return EPERM;
	out->path = sl_strdup(real);
	if (!out->path)
		return ENOMEM;
	out->dev = (uint64_t)st.st_dev;
	out->ino = (uint64_t)st.st_ino;
	return 0;
}

/* ---------------- the caller's own /proc/TID ---------------- */

/*
 * The opener thread lives in a Landlock domain of its own, so the kernel
 * refuses it the caller's ptrace-guarded /proc files (maps, mem, environ,
 * pagemap, ...), which the caller may always open itself.  With /proc
 * readable and nothing denied beneath it, a read-only open of
 * /proc/PID/REST (PID the caller's tid or its process id, spelled so or
 * via /proc/self) is done
 * by the calling supervisor thread instead: from the caller's pinned
 * /proc/TID, RESOLVE_BENEATH (no way out of it) and no magic links, with
 * our effective capabilities lowered so the file is opened (and keeps
 * f_cred) with the caller's rights, not ours.
 */
static const char *own_proc_rest(const char *p, long *pid)
{
	if (strncmp(p, "/proc/", 6) != 0)
		return NULL;
	char *end;
	long v = strtol(p + 6, &end, 10);
	if (end == p + 6 || v <= 0 || (*end != '/' && *end != '\0') || p[6] < '0' || p[6] > '9')
		return NULL;
	*pid = v;
	while (*end == '/')
		end++;
	return *end ? end : ".";
}

/* The caller's /proc/PID as an O_PATH fd, pid being its tid or its
 * thread group's id (then /proc/PID/task/TID exists), confirmed; -errno,
 * or -ENOENT for any other pid. */
static int own_proc_dir(int listener, const sandlock_notif_t *n, long pid)
{
	if (pid == (long)n->pid)
		return sl_child_procdir(listener, n);
	char p[64];
	snprintf(p, sizeof p, "/proc/%ld", pid);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	snprintf(p, sizeof p, "task/%u", n->pid);
	if (faccessat(fd, p, F_OK, 0) != 0 || !sl_notif_valid(listener, n->id)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static bool read_only(uint64_t f)
{
	return (f & O_ACCMODE) == O_RDONLY && !(f & (O_CREAT | O_TRUNC | __O_TMPFILE | O_APPEND));
}

static void perform_local(struct req *r)
{
	r->set_umask = false; /* never: this thread shares the process's umask */
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0) {
		r->fd = -1;
		r->err = EPERM; /* never with more rights than the caller */
		return;
	}
	perform(r);
	sl_caps_restore(&sv);
}

/* ---------------- one on-behalf open ---------------- */

static bool op_fast(const struct sl_opener *op)
{
	return op->proc_guard && op->proc_fast;
}

/* Our flags and starting point for the request.  0 or an errno. */
static bool wants_write(uint64_t f)
{
	return (f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC)) || (f & O_TMPFILE) == O_TMPFILE;
}

/*
 * Under a virtual chroot: the guest path becomes (view directory, path
 * inside it) resolved with RESOLVE_IN_ROOT.  A caller's own
 * RESOLVE_BENEATH / RESOLVE_IN_ROOT is relative to its dirfd, which must
 * lie inside the view; the kernel then keeps the lookup beneath it.
 */
static int prepare_in_view(const struct sl_view *v, int listener, const sandlock_notif_t *n,
                           const struct open_call *c, const char *path, struct req *r,
                           char *rel, size_t relcap)
{
	uint64_t caller_resolve = r->how.resolve;
	r->how.resolve |= RESOLVE_NO_MAGICLINKS;
	if (caller_resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
		if (path[0] == '/' && (caller_resolve & RESOLVE_BENEATH))
			return EXDEV;
		int base = sl_child_dirfd(listener, n, c->dirfd);
		if (base < 0)
			return -base;
		if (!sl_view_fd_guest(v, base, rel, relcap)) {
			close(base);
			return EACCES;
		}
		r->base = base;
		r->path = path;
		return 0;
	}
	char guest[PATH_MAX];
	int e = sl_view_call_path(v, listener, n, c->dirfd, path, guest, sizeof guest);
	bool ro = false;
	int base = -1;
	if (!e)
		e = sl_view_map(v, guest, !(r->how.flags & O_NOFOLLOW) &&
		                          !((r->how.flags & O_CREAT) && (r->how.flags & O_EXCL)),
		                &base, rel, relcap, &ro);
	if (e)
		return e;
	if (ro && wants_write(r->how.flags) && !(r->how.flags & O_PATH))
		return EROFS;
	r->base = fcntl(base, F_DUPFD_CLOEXEC, 3); /* closed by the caller of prepare */
	if (r->base < 0)
		return EMFILE;
	r->path = rel;
	r->how.resolve |= RESOLVE_IN_ROOT;
	return 0;
}

static int prepare(const struct sl_opener *op, int listener, const sandlock_notif_t *n,
                   const struct open_call *c, const char *path, struct req *r, char *reopen,
                   size_t cap, char *rel, size_t relcap)
{
	uint64_t caller_resolve = r->how.resolve;
	int own = caller_resolve ? -1 : own_fd_reopen(path, n->pid);
	if (own >= 0) {
		/* The caller's own fd: reopen our duplicate through our /proc
		 * (the magic link is ours now; Landlock still checks the file).
		 * Without pidfd_getfd (mechs.h) the duplicate is an O_PATH open
		 * of the same file through the caller's /proc: the same reopen. */
		int dup = sl_mech_getfd() ? sl_child_getfd(listener, n, own)
		                          : sl_child_dirfd(listener, n, own);
		if (dup < 0)
			return dup == -EBADF ? ENOENT : -dup;
		snprintf(reopen, cap, "/proc/self/fd/%d", dup);
		r->base = dup; /* closed by the caller of prepare */
		r->path = reopen;
		return 0;
	}
	if (op->view)
		return prepare_in_view(op->view, listener, n, c, path, r, rel, relcap);
	long pid = 0;
	const char *rest = own < 0 && !caller_resolve && op_fast(op) && read_only(r->how.flags)
	                           ? own_proc_rest(path, &pid) : NULL;
	int base = rest ? own_proc_dir(listener, n, pid) : -ENOENT; /* pinned, confirmed */
	if (rest && base == -ESRCH)
		return ESRCH;
	if (rest && base >= 0) {
		r->base = base;
		r->path = rest;
		r->how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		r->local = true;
		return 0;
	}
	r->how.resolve |= RESOLVE_NO_MAGICLINKS;
	r->path = path;
	bool absolute = path[0] == '/' && !(caller_resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT));
	if (absolute) {
		r->base = AT_FDCWD;
		return 0;
	}
	base = sl_child_dirfd(listener, n, c->dirfd);
	if (base < 0)
		return -base;
	r->base = base;
	return 0;
}

/* Open as asked, plus O_NONBLOCK/O_NOCTTY (header); undo O_NONBLOCK. */
static int run_request(struct sl_opener *op, struct req *r, bool *clear_nonblock)
{
	uint64_t f = r->how.flags;
	*clear_nonblock = false;
	if (!(f & O_PATH)) {
		*clear_nonblock = !(f & O_NONBLOCK);
		r->how.flags |= O_NONBLOCK | O_NOCTTY;
	}
	r->how.flags |= O_CLOEXEC; /* ours; the caller's copy is set by ADDFD */
	if (r->local)
		perform_local(r);
	else
		submit(op, r);
	return r->err;
}

/* One open of the prepared request with these flags and mode. */
static int attempt(struct sl_opener *op, const struct req *tmpl, uint64_t flags, uint64_t mode,
                   int *fd, bool *clear_nb)
{
	struct req r = *tmpl;
	r.how.flags = flags;
	r.how.mode = mode;
	r.set_umask = tmpl->set_umask && (flags & (O_CREAT | __O_TMPFILE));
	int e = run_request(op, &r, clear_nb);
	*fd = r.fd;
	return e;
}

/*
 * The open itself.  With a check, the side effects that cannot be undone
 * wait for its verdict: O_TRUNC is left out (the file is truncated after
 * the check allowed it), and O_CREAT first looks for an existing file; a
 * file it had to create is removed again if the check refuses it.
 */
static int open_deferred(struct sl_opener *op, const struct req *r, bool deferred,
                         int *fd, bool *created, bool *clear_nb)
{
	uint64_t f = r->how.flags;
	*created = false;
	if (!deferred)
		return attempt(op, r, f, r->how.mode, fd, clear_nb);
	uint64_t probe = f & ~(uint64_t)(O_TRUNC | O_CREAT | O_EXCL);
	int e = ENOENT;
	for (int tries = 0; tries < 3; tries++) {
		e = attempt(op, r, probe, 0, fd, clear_nb);
		if (e == 0) {
			if ((f & O_CREAT) && (f & O_EXCL)) {
				close(*fd);
				*fd = -1;
				e = EEXIST;
			}
			return e;
		}
		if (e != ENOENT || !(f & O_CREAT))
			return e;
		e = attempt(op, r, (f & ~(uint64_t)O_TRUNC) | O_EXCL, r->how.mode, fd, clear_nb);
		if (e == 0) {
			*created = true;
			return 0;
		}
		if (e != EEXIST || (f & O_EXCL))
			return e;
		/* It appeared meanwhile, or the name is a dangling symlink
		 * (O_EXCL does not follow it): look again, then give up. */
	}
	return e;
}

/* Undo a creation the check refused: remove the entry if it is still the
 * file we made (same device and inode), with our capabilities lowered. */
static void remove_created(const sandlock_opened_t *o)
{
	struct sl_caps_saved sv;
	struct stat st;
	if (sl_caps_lower(&sv) < 0)
		return;
	if (fstatat(AT_FDCWD, o->path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)st.st_dev == o->dev && (uint64_t)st.st_ino == o->ino)
		unlink(o->path);
	sl_caps_restore(&sv);
}

/* The files that hold the host's name, as the opener serves them. */
static bool is_hostname_file(const char *real)
{
	return strcmp(real, "/proc/sys/kernel/hostname") == 0 || strcmp(real, "/etc/hostname") == 0;
}

/* Replace *fd (a file opened for reading) by a sealed memfd holding
 * text, so the guest reads what we serve and can never change it.
 * 0 or an errno. */
static int serve_text(const char *name, const char *text, int *fd)
{
	int m = sl_virt_memfd(name, text, strlen(text));
	if (m < 0)
		return EIO;
	close(*fd);
	*fd = m;
	return 0;
}

/* The sandbox's name, as the hostname files hold it. */
static int serve_hostname(const struct sl_opener *op, int *fd)
{
	char line[80];
	snprintf(line, sizeof line, "%s\n", op->hostname);
	return serve_text("hostname", line, fd);
}

/* Is fd the host's /etc/hosts (same device and inode)? */
static bool is_hosts_file(const struct sl_opener *op, int fd)
{
	struct stat st;
	return op->hosts && op->hosts_ino && fstat(fd, &st) == 0 && st.st_dev == op->hosts_dev &&
	       st.st_ino == op->hosts_ino;
}

/* A TCP socket table of procfs (/proc/PID/net/tcp, .../tcp6)? */
static bool is_proc_net_tcp(int fd, const char *real)
{
	size_t n = strlen(real);
	return strncmp(real, "/proc/", 6) == 0 &&
	       ((n > 8 && strcmp(real + n - 8, "/net/tcp") == 0) ||
	        (n > 9 && strcmp(real + n - 9, "/net/tcp6") == 0)) &&
	       on_procfs(fd);
}

/* The whole of *fd (at most 64 MiB) into b: 0 or an errno. */
static int read_whole(int fd, sl_buf *b)
{
	char chunk[16384];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		if (b->len > (64u << 20) || sl_buf_append(b, chunk, (size_t)n) < 0)
			return EIO;
	return n < 0 ? errno : 0;
}

/* The table of *fd with virtual ports, served as a sealed memfd. */
static int serve_proc_net(const struct sl_opener *op, int *fd)
{
	sl_buf b = { 0 };
	int e = read_whole(*fd, &b);
	if (!e) {
		if (!b.data)
			return serve_text("tcp", "", fd);
		sl_portmap_rewrite_proc_net(op->ports, (char *)b.data);
		e = serve_text("tcp", (char *)b.data, fd);
	}
	sl_buf_free(&b);
	return e;
}

/* Is fd one of the trust bundles the CA is spliced into? */
static bool is_cabundle(const struct sl_opener *op, int fd)
{
	struct stat st;
	if (!op->nbundles || fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < op->nbundles; i++)
		if (st.st_dev == op->bundles[i].dev && st.st_ino == op->bundles[i].ino)
			return true;
	return false;
}

/* The bundle of *fd with the proxy's CA certificate appended. */
static int serve_cabundle(const struct sl_opener *op, int *fd)
{
	sl_buf b = { 0 };
	int e = read_whole(*fd, &b);
	if (!e && b.len && b.data[b.len - 1] != '\n')
		e = sl_buf_append(&b, "\n", 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = sl_buf_append(&b, op->ca_pem, strlen(op->ca_pem) + 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = serve_text("cabundle", (char *)b.data, fd);
	sl_buf_free(&b);
	return e;
}

/* After the open: still pending, what it is, the check, the deferred
 * truncation, the caller's O_NONBLOCK.  0 or an errno. */
static int finish(struct sl_opener *op, int listener, const sandlock_notif_t *n, int *fdp,
                  bool trunc, bool created, bool clear_nb, sl_opener_check_fn check, void *ud,
                  sandlock_opened_t *out)
{
	if (!sl_notif_valid(listener, n->id))
		return ESRCH; /* pinned objects only so far: nobody waits for it */
	int fd = *fdp;
	int e = describe(op, fd, out);
	out->fd = fd; /* the check may look at it (fstat); still ours */
	if (!e && check) {
		int32_t v = check(ud, out);
		e = v == 0 ? 0 : v > 0 ? v : EPERM;
		if (e && created)
			remove_created(out);
	}
	struct stat st;
	if (!e && trunc && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)
		e = errno == EINVAL ? EACCES : errno;
	if (!e && clear_nb) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
			e = EIO;
	}
	int acc = fcntl(fd, F_GETFL);
	bool reading = acc >= 0 && (acc & O_ACCMODE) == O_RDONLY && !(acc & O_PATH);
	if (!e && reading && op->hostname[0] && is_hostname_file(out->path))
		e = serve_hostname(op, fdp);
	else if (!e && reading && is_hosts_file(op, fd))
		e = serve_text("hosts", op->hosts, fdp);
	else if (!e && reading && is_cabundle(op, fd))
		e = serve_cabundle(op, fdp);
	else if (!e && reading && op->ports && is_proc_net_tcp(fd, out->path))
		e = serve_proc_net(op, fdp);
	else if (!e && reading)
		e = sl_virt_serve(op->virt, out->path, (pid_t)n->pid, fdp);
	return e;
}

int sl_opener_open_call(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                        sandlock_mem_t *m, sl_opener_check_fn check, void *ud,
                        sandlock_opened_t *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	struct open_call c;
	int e = decode(n, m, &c);
	if (e)
		return e;
	char *path = read_path(m, c.path, n, &e);
	if (!path)
		return e;
	struct req r = { .base = AT_FDCWD, .how = c.how, .fd = -1 };
	out->newfd_flags = (c.how.flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	r.set_umask = c.how.flags & (O_CREAT | __O_TMPFILE);
	if (r.set_umask || !op->fixed_ids) {
		/* /proc/TID/status is costly: only for a create or shifting ids. */
		int piddir = sl_child_procdir(listener, n); /* pins the caller */
		if (piddir < 0) {
			free(path);
			return ESRCH;
		}
		e = caller_creds(piddir, &r.umask);
		close(piddir);
	}
	char reopen[48];
	char *rel = op->view ? malloc(PATH_MAX) : NULL;
	if (!e && op->view && !rel)
		e = ENOMEM;
	if (!e)
		e = prepare(op, listener, n, &c, path, &r, reopen, sizeof reopen, rel, PATH_MAX);
	uint64_t f = c.how.flags;
	/* O_RDONLY|O_TRUNC truncates in the kernel but not through ftruncate:
	 * left to the open itself. */
	bool trunc = check && (f & O_TRUNC) && !(f & O_PATH) && (f & O_ACCMODE) != O_RDONLY;
	bool deferred = trunc || (check && (f & O_CREAT));
	bool clear_nb = false, created = false;
	int fd = -1;
	if (!e)
		e = open_deferred(op, &r, deferred, &fd, &created, &clear_nb);
	if (r.base >= 0)
		close(r.base);
	free(path);
	free(rel);
	if (e)
		return e;
	e = finish(op, listener, n, &fd, trunc, created, clear_nb, check, ud, out);
	if (e) {
		close(fd);
		sandlock_string_free(out->path);
		memset(out, 0, sizeof(*out));
		out->fd = -1;
		return e;
	}
	out->fd = fd;
	return 0;
}

/*
 * A read-only open of a path the supervisor resolved itself (the COW
 * layer's merged view, builtins/cow.c), by the confined thread: Landlock
 * still decides, as for the caller.  No /proc files (their "self" would
 * be ours) and none of the served views.
 */
int sl_opener_open_at(struct sl_opener *op, int listener, const sandlock_notif_t *n, int base,
                      const char *path, uint64_t flags, uint64_t resolve, int *fd)
{
	*fd = -1;
	if (wants_write(flags) && !(flags & O_PATH))
		return EACCES;
	if (!op->fixed_ids) {
		mode_t um;
		int piddir = sl_child_procdir(listener, n);
		if (piddir < 0)
			return ESRCH;
		int e = caller_creds(piddir, &um);
		close(piddir);
		if (e)
			return e;
	}
	struct req r = { .base = base, .path = path, .fd = -1 };
	r.how.flags = flags & ((flags & O_PATH) ? K_O_PATH_FLAGS : K_VALID_OPEN_FLAGS);
	r.how.resolve = resolve | RESOLVE_NO_MAGICLINKS;
	bool clear_nb = false;
	int e = run_request(op, &r, &clear_nb);
	if (e)
		return e;
	int fl = clear_nb ? fcntl(r.fd, F_GETFL) : 0;
	if (on_procfs(r.fd) || fl < 0 || (clear_nb && fcntl(r.fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		close(r.fd);
		return EACCES;
	}
	*fd = r.fd;
	return 0;
}

int sl_opener_bind_socket(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                          int sock, const struct sockaddr *addr, socklen_t len)
{
	int piddir = sl_child_procdir(listener, n); /* pins the caller */
	if (piddir < 0)
		return ESRCH;
	struct req r = { .bind = true, .sock = sock, .addr = addr, .alen = len, .fd = -1 };
	int e = caller_creds(piddir, &r.umask); /* its ids (DAC) and umask (the file's mode) */
	r.cwd = e ? -1 : openat(piddir, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!e && r.cwd < 0)
		e = errno == ENOENT ? ESRCH : errno;
	close(piddir);
	if (!e) {
		submit(op, &r);
		e = r.err;
	}
	if (r.cwd >= 0)
		close(r.cwd);
	return e;
}

/* ---------------- the C ABI ---------------- */

SL_EXPORT int32_t sandlock_open_on_behalf(sandlock_mem_t *m, const sandlock_notif_t *n,
                                          sandlock_open_check_fn check, void *ud,
                                          sandlock_opened_t *out)
{
	if (!out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (!m || !n || n->id != m->id || (pid_t)n->pid != m->pid ||
	    !sl_sys_is_open_family(n->syscall_nr))
		return EINVAL;
	struct sl_opener *op = sl_opener_find(m->listener);
	if (!op)
		return ENOSYS; /* this run has no opener (no handlers) */
	return sl_opener_open_call(op, m->listener, n, m, check, ud, out);
}
