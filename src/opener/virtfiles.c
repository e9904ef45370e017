/*
 * virtfiles.c — the synthetic files of virtfiles.h.
 *
 * WHY: programs size themselves from these files (thread pools from the
 * CPU count, caches from the memory size), so a sandbox limited to 2 CPUs
 * or 512 MiB should say so; the mount table would show the host's layout;
 * and a seeded run must read the same bytes from /dev/urandom every time.
 * Each view is computed from the real file the opener opened (read here
 * through that fd), so it follows the host where it does not lie.
 */
#include "opener/virtfiles.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <fcntl.h>

#include "config.h"
#include "opener/urandom.h"
#include "sandlock.h"
#include "util.h"

#define MAX_REAL (4u << 20) /* a real file larger than this is refused (EIO) */

struct sl_virt {
	uint32_t num_cpus;   /* 0: real CPU files */
	uint64_t mem_budget; /* 0: real meminfo */
	struct sl_urandom *urandom; /* random_seed: the seeded device streams */
	bool mounts;         /* /proc readable: filter the mount tables */
	sl_strvec visible;   /* fs_read + fs_write */
	sl_strvec hidden;    /* fs_deny */
};

struct sl_virt *sl_virt_new(const struct sandlock_sandbox *cfg)
{
	struct sl_virt *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->num_cpus = cfg->num_cpus;
	v->mem_budget = cfg->max_memory;
	v->mounts = true;
	int rc = 0;
	if (cfg->has_random_seed && !(v->urandom = sl_urandom_new(cfg->random_seed)))
		rc = -1;
	for (size_t i = 0; i < cfg->fs_read.n && !rc; i++)
		rc = sl_strvec_push(&v->visible, cfg->fs_read.v[i]);
	for (size_t i = 0; i < cfg->fs_write.n && !rc; i++)
		rc = sl_strvec_push(&v->visible, cfg->fs_write.v[i]);
	for (size_t i = 0; i < cfg->fs_deny.n && !rc; i++)
		rc = sl_strvec_push(&v->hidden, cfg->fs_deny.v[i]);
	if (rc) {
		sl_virt_free(v);
		return NULL;
	}
	return v;
}

void sl_virt_free(struct sl_virt *v)
{
	if (!v)
		return;
	sl_urandom_free(v->urandom);
	sl_strvec_free(&v->visible);
	sl_strvec_free(&v->hidden);
	free(v);
}

int sl_virt_memfd(const char *name, const void *buf, size_t len)
{
	int m = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (m < 0)
		return -1;
	const char *p = buf;
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(m, p + done, len - done);
		if (w <= 0) {
			close(m);
			return -1;
		}
		done += (size_t)w;
	}
	if (lseek(m, 0, SEEK_SET) != 0 ||
	    fcntl(m, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
		close(m);
		return -1;
	}
	return m;
}

/* The whole content of fd (a /proc or /sys file: read to EOF), NUL-ended. */
static int slurp(int fd, sl_buf *out)
{
	char chunk[8192];
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno;
		if (r == 0)
			break;
		if (out->len + (size_t)r > MAX_REAL)
			return EIO;
		if (sl_buf_append(out, chunk, (size_t)r) < 0)
			return ENOMEM;
	}
	if (sl_buf_append(out, "", 1) < 0)
		return ENOMEM;
	out->len--; /* the NUL ends the text, it is not part of it */
	return 0;
}

static int appendf(sl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int appendf(sl_buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof tmp)
		n = sizeof tmp - 1;
	return sl_buf_append(b, tmp, (size_t)n);
}

/* ---------------- CPUs ---------------- */

/* "0-(n-1)\n" or "0\n": the kernel's cpulist format. */
static int cpu_range(uint32_t n, sl_buf *out)
{
	return n == 1 ? appendf(out, "0\n") : appendf(out, "0-%u\n", n - 1);
}

static bool key_is(const char *line, size_t len, const char *key)
{
	size_t k = strlen(key);
	if (len < k || strncmp(line, key, k) != 0)
		return false;
	for (size_t i = k; i < len; i++) {
		if (line[i] == ':')
			return true;
		if (line[i] != ' ' && line[i] != '\t')
			return false;
	}
	return false;
}

/* One processor block of the real cpuinfo as processor `cpu` of n. */
static int cpu_block(const char *blk, size_t blen, uint32_t cpu, uint32_t n, sl_buf *out)
{
	const char *p = blk, *end = blk + blen;
	int rc = 0;
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (key_is(p, len, "processor"))
			rc = appendf(out, "processor\t: %u\n", cpu);
		else if (key_is(p, len, "core id"))
			rc = appendf(out, "core id\t\t: %u\n", cpu);
		else if (key_is(p, len, "apicid"))
			rc = appendf(out, "apicid\t\t: %u\n", cpu);
		else if (key_is(p, len, "initial apicid"))
			rc = appendf(out, "initial apicid\t: %u\n", cpu);
		else if (key_is(p, len, "siblings"))
			rc = appendf(out, "siblings\t: %u\n", n);
		else if (key_is(p, len, "cpu cores"))
			rc = appendf(out, "cpu cores\t: %u\n", n);
		else if (key_is(p, len, "physical id"))
			rc = appendf(out, "physical id\t: 0\n");
		else
			rc = sl_buf_append(out, p, len) < 0 || sl_buf_append(out, "\n", 1) < 0 ? -1 : 0;
		p += len + 1;
	}
	return rc;
}

/*
 * The real cpuinfo is a list of blocks separated by blank lines, one per
 * processor (starting "processor : N") and possibly others (aarch64's
 * trailing "Hardware" lines).  The view has n processor blocks, copies of
 * the real ones in turn, renumbered; other blocks are kept once, at the end.
 */
static int cpuinfo(const char *real, uint32_t n, sl_buf *out)
{
	const char *blk[SL_MAX_CORES];
	size_t blen[SL_MAX_CORES], nproc = 0;
	sl_buf other = { 0 };
	int rc = 0;
	for (const char *p = real; *p && !rc;) {
		const char *sep = strstr(p, "\n\n");
		size_t len = sep ? (size_t)(sep - p) + 1 : strlen(p);
		if (key_is(p, strcspn(p, "\n"), "processor") && nproc < SL_MAX_CORES) {
			blk[nproc] = p;
			blen[nproc++] = len;
		} else if (len > 1) {
			rc = sl_buf_append(&other, p, len) < 0 || sl_buf_append(&other, "\n", 1) < 0;
		}
		p += len;
		while (*p == '\n')
			p++;
	}
	for (uint32_t i = 0; i < n && nproc && !rc; i++) {
		rc = cpu_block(blk[i % nproc], blen[i % nproc], i, n, out);
		if (!rc)
			rc = sl_buf_append(out, "\n", 1);
	}
	if (!rc && other.len)
		rc = sl_buf_append(out, other.data, other.len) < 0;
	sl_buf_free(&other);
	return rc ? ENOMEM : (nproc ? 0 : EIO);
}

/*
 * /proc/stat: the "cpuK" lines become cpu0..cpu(n-1), copies of the real
 * ones in turn (the "cpu" total line and the rest are kept as they are).
 */
static int proc_stat(const char *real, uint32_t n, sl_buf *out)
{
	const char *line[SL_MAX_CORES];
	size_t len[SL_MAX_CORES], ncpu = 0;
	bool done = false;
	int rc = 0;
	for (const char *p = real; *p && !rc;) {
		size_t l = strcspn(p, "\n");
		bool cpu_k = l > 3 && strncmp(p, "cpu", 3) == 0 && p[3] >= '0' && p[3] <= '9';
		if (cpu_k && ncpu < SL_MAX_CORES) {
			line[ncpu] = p;
			len[ncpu++] = l;
		} else if (!cpu_k) {
			if (ncpu && !done) { /* the first line after the cpuK block */
				for (uint32_t i = 0; i < n && !rc; i++) {
					const char *src = line[i % ncpu] + 3;
					size_t skip = strspn(src, "0123456789");
					rc = appendf(out, "cpu%u", i) < 0 ||
					     sl_buf_append(out, src + skip, len[i % ncpu] - 3 - skip) < 0 ||
					     sl_buf_append(out, "\n", 1) < 0;
				}
				done = true;
			}
			rc = rc || sl_buf_append(out, p, l) < 0 || sl_buf_append(out, "\n", 1) < 0;
		}
		p += l;
		if (*p)
			p++;
	}
	return rc ? ENOMEM : (ncpu && done ? 0 : EIO);
}

/* ---------------- memory ---------------- */

/* The kB value of "Key:   123 kB" in meminfo, or 0. */
static uint64_t mem_field(const char *mi, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\n%s:", key);
	const char *l = strncmp(mi, pat + 1, strlen(pat + 1)) == 0 ? mi - 1 : strstr(mi, pat);
	return l ? strtoull(l + strlen(pat), NULL, 10) : 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * MemTotal is the budget; MemFree and MemAvailable are the host's, capped
 * at what the budget leaves beyond the caller's cgroup's memory.current; Buffers, Cached and SReclaimable shrink to fit in what is
 * available beyond free (so total - free - buffers - cached, the "used" of
 * free(1), is never negative); every other line is capped at the total.
 */
static int meminfo(const char *real, uint64_t budget, uint64_t used, sl_buf *out)
{
	uint64_t total = budget / 1024, left = used / 1024 < total ? total - used / 1024 : 0;
	uint64_t mfree = min_u64(mem_field(real, "MemFree"), left);
	uint64_t avail = min_u64(mem_field(real, "MemAvailable"), left);
	if (avail < mfree)
		avail = mfree;
	uint64_t room = avail - mfree;
	uint64_t buffers = min_u64(mem_field(real, "Buffers"), room);
	room -= buffers;
	uint64_t cached = min_u64(mem_field(real, "Cached"), room);
	room -= cached;
	uint64_t srecl = min_u64(mem_field(real, "SReclaimable"), room);
	int rc = 0;
	for (const char *p = real; *p && !rc;) {
		size_t len = strcspn(p, "\n");
		const char *colon = memchr(p, ':', len);
		char key[64] = "";
		if (colon && (size_t)(colon - p) < sizeof key)
			memcpy(key, p, (size_t)(colon - p));
		uint64_t v = colon ? strtoull(colon + 1, NULL, 10) : 0;
		bool kb = len > 3 && strncmp(p + len - 3, " kB", 3) == 0;
		if (strcmp(key, "MemTotal") == 0)
			v = total;
		else if (strcmp(key, "MemFree") == 0)
			v = mfree;
		else if (strcmp(key, "MemAvailable") == 0)
			v = avail;
		else if (strcmp(key, "Buffers") == 0)
			v = buffers;
		else if (strcmp(key, "Cached") == 0)
			v = cached;
		else if (strcmp(key, "SReclaimable") == 0)
			v = srecl;
		else if (kb)
			v = min_u64(v, total);
		if (colon && kb)
			rc = appendf(out, "%s:%*llu kB\n", key, (int)(len - strlen(key) - 4),
			             (unsigned long long)v);
		else
			rc = sl_buf_append(out, p, len) < 0 || sl_buf_append(out, "\n", 1) < 0;
		p += len;
		if (*p)
			p++;
	}
	return rc ? ENOMEM : 0;
}

/* The first number in file path, or 0. */
static uint64_t read_num(const char *path)
{
	FILE *f = fopen(path, "re");
	unsigned long long v = 0;
	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

/*
 * The memory charged to the cgroup of thread tid (bytes): memory.current
 * of its v2 group, else memory.usage_in_bytes of its v1 memory group, at
 * their usual mount points, when that group is the run's own (named
 * sandlock-*, cgroup.c); 0 if unknown (the budget then counts as unused).
 */
static uint64_t cgroup_used(pid_t tid)
{
	char p[128], line[2048], path[2200];
	snprintf(p, sizeof p, "/proc/%d/cgroup", (int)tid);
	FILE *f = fopen(p, "re");
	uint64_t v = 0;
	while (f && !v && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2 || c2[1] != '/')
			continue;
		*c2 = '\0';
		const char *leaf = strrchr(c2 + 1, '/');
		if (strncmp(leaf + 1, "sandlock-", 9) != 0)
			continue; /* not the run's own group (none could be made): the
			           * caller's group holds far more than the sandbox */
		if (c1[1] == '\0') { /* "0::/path": cgroup v2 */
			snprintf(path, sizeof path, "/sys/fs/cgroup%s/memory.current", c2 + 1);
			v = read_num(path);
			snprintf(path, sizeof path, "/sys/fs/cgroup/unified%s/memory.current", c2 + 1);
			v = v ? v : read_num(path);
		} else if (strcmp(c1 + 1, "memory") == 0) {
			snprintf(path, sizeof path, "/sys/fs/cgroup/memory%s/memory.usage_in_bytes",
			         c2 + 1);
			v = read_num(path);
		}
	}
	if (f)
		fclose(f);
	return v;
}

/* ---------------- mount tables ---------------- */

/* Field `idx` (0-based, space-separated) of a line, decoded (\040 etc.). */
static bool mount_field(const char *line, size_t len, int idx, char *out, size_t cap)
{
	const char *p = line, *end = line + len;
	for (int i = 0; i < idx; i++) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		if (!sp)
			return false;
		p = sp + 1;
	}
	size_t o = 0;
	for (; p < end && *p != ' '; p++) {
		char c = *p;
		if (c == '\\' && end - p >= 4 && p[1] >= '0' && p[1] <= '3') {
			c = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) | (p[3] - '0'));
			p += 3;
		}
		if (o + 1 >= cap)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return o > 0;
}

static bool mount_visible(const struct sl_virt *v, const char *mp)
{
	for (size_t i = 0; i < v->hidden.n; i++)
		if (sl_path_under(mp, v->hidden.v[i]))
			return false;
	for (size_t i = 0; i < v->visible.n; i++)
		if (sl_path_under(mp, v->visible.v[i]))
			return true;
	return false;
}

/* Keep the lines whose mount point (field idx) the guest may see. */
static int mounts(const struct sl_virt *v, const char *real, int idx, sl_buf *out)
{
	char mp[4096];
	for (const char *p = real; *p;) {
		size_t len = strcspn(p, "\n");
		if (mount_field(p, len, idx, mp, sizeof mp) && mount_visible(v, mp) &&
		    (sl_buf_append(out, p, len) < 0 || sl_buf_append(out, "\n", 1) < 0))
			return ENOMEM;
		p += len;
		if (*p)
			p++;
	}
	return 0;
}

/* 4 for /proc/N[/task/T]/mountinfo, 1 for .../mounts, -1 otherwise. */
static int mount_table(const char *real)
{
	if (strncmp(real, "/proc/", 6) != 0)
		return -1;
	const char *p = real + 6;
	for (int level = 0; level < 2; level++) {
		size_t d = strspn(p, "0123456789");
		if (d == 0 || p[d] != '/')
			return -1;
		p += d + 1;
		if (strcmp(p, "mounts") == 0)
			return 1;
		if (strcmp(p, "mountinfo") == 0)
			return 4;
		if (level == 0 && strncmp(p, "task/", 5) != 0)
			return -1;
		p += 5;
	}
	return -1;
}

/* ---------------- serving ---------------- */

static bool is_cpu_list(const char *real)
{
	return strcmp(real, "/sys/devices/system/cpu/online") == 0 ||
	       strcmp(real, "/sys/devices/system/cpu/possible") == 0 ||
	       strcmp(real, "/sys/devices/system/cpu/present") == 0;
}

int sl_virt_serve(struct sl_virt *v, const char *real, pid_t caller, int *fd)
{
	if (!v)
		return 0;
	sl_buf in = { 0 }, out = { 0 };
	int e = 0, table = v->mounts ? mount_table(real) : -1;
	if (v->num_cpus && is_cpu_list(real)) {
		e = cpu_range(v->num_cpus, &out) < 0 ? ENOMEM : 0;
	} else if (v->num_cpus && strcmp(real, "/proc/cpuinfo") == 0) {
		e = slurp(*fd, &in);
		if (!e)
			e = cpuinfo((const char *)in.data, v->num_cpus, &out);
	} else if (v->num_cpus && strcmp(real, "/proc/stat") == 0) {
		e = slurp(*fd, &in);
		if (!e)
			e = proc_stat((const char *)in.data, v->num_cpus, &out);
	} else if (v->mem_budget && strcmp(real, "/proc/meminfo") == 0) {
		e = slurp(*fd, &in);
		if (!e)
			e = meminfo((const char *)in.data, v->mem_budget, cgroup_used(caller), &out);
	} else if (v->urandom && (strcmp(real, "/dev/urandom") == 0 ||
	                          strcmp(real, "/dev/random") == 0)) {
		int m = sl_urandom_open(v->urandom);
		if (m < 0)
			return -m;
		close(*fd);
		*fd = m;
		return 0;
	} else if (table >= 0) {
		e = slurp(*fd, &in);
		if (!e)
			e = mounts(v, (const char *)in.data, table, &out);
	} else {
		return 0;
	}
	int m = e ? -1 : sl_virt_memfd("view", out.data ? (const void *)out.data : "", out.len);
	sl_buf_free(&in);
	sl_buf_free(&out);
	if (e)
		return e;
	if (m < 0)
		return EIO;
	close(*fd);
	*fd = m;
	return 0;
}
