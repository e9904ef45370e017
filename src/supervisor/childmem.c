/*
 * childmem.c — reading and writing the memory of a trapped process.
 *
 * The kernel reports only a pid with each notification, and pids are
 * recycled.  The safe order is: open /proc/PID/mem (pins that process's
 * address space), then SECCOMP_IOCTL_NOTIF_ID_VALID (the notification is
 * still pending, so the pid still names the caller), read, and check
 * ID_VALID again before the data is trusted (the caller may have died and
 * the pid been reused during the read).
 *
 * Opening /proc/PID/mem costs ~1.6 us; a pread on an open fd ~0.3 us, so
 * the supervisor thread keeps one fd per pid in a small LRU cache.  After
 * execve (or pid reuse) a cached fd still points at the old address
 * space, whose reads then return 0/EIO: on a failed or short read we
 * reopen once and retry.  The supervisor also drops a pid's entry after
 * every execve/execveat it sees (supervisor.c), because an old address
 * space can stay alive when it is shared with a vfork parent.
 *
 * Deferred jobs run on worker threads and must not touch the cache; they
 * use a private handle (cache == NULL, owns_fd) instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "supervisor/childmem.h"
#include "util.h"

#define MEMCACHE_SLOTS 64
#define MEM_MAX_REQUEST (1u << 20) /* refuse single requests above 1 MiB */

struct sl_memcache {
	struct {
		pid_t pid; /* 0 = free slot */
		int fd;
		uint64_t used; /* LRU stamp */
	} e[MEMCACHE_SLOTS];
	uint64_t clock;
};

struct sl_memcache *sl_memcache_new(void)
{
	struct sl_memcache *c = calloc(1, sizeof(*c));
	if (c)
		for (int i = 0; i < MEMCACHE_SLOTS; i++)
			c->e[i].fd = -1;
	return c;
}

void sl_memcache_free(struct sl_memcache *c)
{
	if (!c)
		return;
	for (int i = 0; i < MEMCACHE_SLOTS; i++)
		if (c->e[i].fd >= 0)
			close(c->e[i].fd);
	free(c);
}

void sl_memcache_forget(struct sl_memcache *c, pid_t pid)
{
	if (!c)
		return;
	for (int i = 0; i < MEMCACHE_SLOTS; i++) {
		if (c->e[i].pid == pid && c->e[i].fd >= 0) {
			close(c->e[i].fd);
			c->e[i].fd = -1;
			c->e[i].pid = 0;
		}
	}
}

static int cache_lookup(struct sl_memcache *c, pid_t pid)
{
	for (int i = 0; i < MEMCACHE_SLOTS; i++) {
		if (c->e[i].pid == pid && c->e[i].fd >= 0) {
			c->e[i].used = ++c->clock;
			return c->e[i].fd;
		}
	}
	return -1;
}

/* Insert fd for pid, evicting the least recently used entry if full. */
static void cache_insert(struct sl_memcache *c, pid_t pid, int fd)
{
	int victim = 0;
	for (int i = 0; i < MEMCACHE_SLOTS; i++) {
		if (c->e[i].fd < 0) {
			victim = i;
			break;
		}
		if (c->e[i].used < c->e[victim].used)
			victim = i;
	}
	if (c->e[victim].fd >= 0)
		close(c->e[victim].fd);
	c->e[victim].pid = pid;
	c->e[victim].fd = fd;
	c->e[victim].used = ++c->clock;
}

bool sl_notif_valid(int listener, uint64_t id)
{
	return ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

void sl_mem_init(sandlock_mem_t *m, int listener, const sandlock_notif_t *n,
                 struct sl_memcache *cache)
{
	m->listener = listener;
	m->id = n->id;
	m->pid = (pid_t)n->pid;
	m->fd = -1;
	m->cache = cache;
	m->owns_fd = cache == NULL;
}

void sl_mem_done(sandlock_mem_t *m)
{
	if (m->owns_fd && m->fd >= 0)
		close(m->fd);
	m->fd = -1;
}

/* Open /proc/PID/mem, then confirm the notification is still pending:
 * only then does the fd certainly belong to the caller. */
static int open_mem(const sandlock_mem_t *m)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)m->pid);
	int fd = sl_fd_high(open(path, O_RDWR | O_CLOEXEC)); /* may be cached */
	if (fd < 0)
		return -1;
	if (!sl_notif_valid(m->listener, m->id)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The fd to use; fresh=true forces a reopen (stale cached address space). */
static int mem_fd(sandlock_mem_t *m, bool fresh)
{
	if (m->fd >= 0 && !fresh)
		return m->fd;
	if (m->cache && !fresh) {
		int fd = cache_lookup(m->cache, m->pid);
		if (fd >= 0)
			return m->fd = fd;
	}
	if (m->owns_fd && m->fd >= 0)
		close(m->fd);
	if (m->cache && fresh)
		sl_memcache_forget(m->cache, m->pid);
	m->fd = open_mem(m);
	if (m->fd >= 0 && m->cache)
		cache_insert(m->cache, m->pid, m->fd);
	return m->fd;
}

static bool range_ok(uint64_t addr, size_t len)
{
	return len <= MEM_MAX_REQUEST && addr + len >= addr && addr + len <= (uint64_t)INT64_MAX;
}

/* pread/pwrite until done; returns bytes transferred (short on a hole). */
static size_t xfer(int fd, uint64_t addr, void *buf, size_t len, bool wr)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = wr ? pwrite(fd, (const char *)buf + done, len - done,
		                        (off_t)(addr + done))
		               : pread(fd, (char *)buf + done, len - done, (off_t)(addr + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return done;
}

/* Read or write exactly len bytes, reopening once if the fd looks stale.
 * Does not check ID_VALID after the transfer: callers do that. */
static int raw_xfer(sandlock_mem_t *m, uint64_t addr, void *buf, size_t len, bool wr)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = mem_fd(m, attempt > 0);
		if (fd < 0)
			return -ESRCH;
		if (xfer(fd, addr, buf, len, wr) == len)
			return 0;
	}
	return -EFAULT;
}

SL_EXPORT int32_t sandlock_mem_peek(sandlock_mem_t *m, uint64_t addr, void *buf, size_t len)
{
	if (!m || (!buf && len))
		return -EINVAL;
	if (!range_ok(addr, len))
		return -EINVAL;
	if (len == 0)
		return sl_notif_valid(m->listener, m->id) ? 0 : -ESRCH;
	int rc = raw_xfer(m, addr, buf, len, false);
	if (rc == 0 && !sl_notif_valid(m->listener, m->id))
		rc = -ESRCH; /* the caller is gone: the bytes may be someone else's */
	if (rc != 0)
		memset(buf, 0, len);
	return rc;
}

SL_EXPORT int32_t sandlock_mem_poke(sandlock_mem_t *m, uint64_t addr, const void *buf,
                                     size_t len)
{
	if (!m || (!buf && len))
		return -EINVAL;
	if (!range_ok(addr, len))
		return -EINVAL;
	/* Never write into a process that is no longer the caller. */
	if (!sl_notif_valid(m->listener, m->id))
		return -ESRCH;
	if (len == 0)
		return 0;
	return raw_xfer(m, addr, (void *)buf, len, true);
}

/* The NUL-terminated string at addr; with verify, NULL unless the
 * notification is still pending after the read. */
static char *read_string(sandlock_mem_t *m, uint64_t addr, size_t max_len, bool verify)
{
	if (!m || max_len == 0)
		return NULL;
	if (max_len > MEM_MAX_REQUEST)
		max_len = MEM_MAX_REQUEST;
	if (!range_ok(addr, max_len))
		return NULL;
	char *s = malloc(max_len + 1);
	if (!s)
		return NULL;
	size_t off = 0;
	bool found = false;
	while (off < max_len && !found) {
		/* Stop at each page boundary: the string may end just before an
		 * unmapped page, which a larger read would fail on. */
		uint64_t cur = addr + off;
		size_t chunk = 4096 - (size_t)(cur & 4095);
		if (chunk > max_len - off)
			chunk = max_len - off;
		if (raw_xfer(m, cur, s + off, chunk, false) != 0)
			break;
		found = memchr(s + off, '\0', chunk) != NULL;
		off += chunk;
	}
	if (!found || (verify && !sl_notif_valid(m->listener, m->id))) {
		free(s);
		return NULL;
	}
	return s;
}

SL_EXPORT char *sandlock_mem_read_string(sandlock_mem_t *m, uint64_t addr, size_t max_len)
{
	return read_string(m, addr, max_len, true);
}

char *sl_mem_read_string_unverified(sandlock_mem_t *m, uint64_t addr, size_t max_len)
{
	return read_string(m, addr, max_len, false);
}
