/*
 * gpu.c — gpu_devices: GPUs granted one by one.
 *
 * A GPU is a handful of character devices.  NVIDIA: /dev/nvidiaN per GPU
 * plus the control nodes every CUDA program opens (nvidiactl, nvidia-uvm,
 * nvidia-uvm-tools, nvidia-modeset, the nvidia-caps directory); DRM/ROCm:
 * /dev/dri/cardN and /dev/dri/renderD(128+N) per GPU plus /dev/kfd.  Rules
 * are on the nodes themselves, so a sandbox given GPU 0 cannot open GPU 1
 * however it names it; /dev itself stays unlisted.  The driver's
 * libraries and its /proc and /sys files are ordinary fs_read grants.
 *
 * SANDLOCK_GPU_DEV_DIR replaces /dev for the tests, which make stand-in
 * nodes with mknod (no GPU on the test machines).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/gpu.h"
#include "launch/llrule.h"
#include "util.h"

#define FS(x) LANDLOCK_ACCESS_FS_##x
#define DEV_RIGHTS (FS(READ_FILE) | FS(WRITE_FILE) | FS(IOCTL_DEV))
#define DIR_RIGHTS (FS(READ_FILE) | FS(READ_DIR) | FS(WRITE_FILE) | FS(IOCTL_DEV))

static const char *const k_control[] = {
	"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", "kfd",
};

static const char *dev_dir(void)
{
	const char *d = getenv("SANDLOCK_GPU_DEV_DIR");
	return d && *d ? d : "/dev";
}

/* A rule on dir/name if it is a character device (or, for want_dir, a
 * directory); anything else, or nothing there: no rule. */
static int grant(int rs, uint64_t handled, const char *dir, const char *name, bool want_dir)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) : S_ISCHR(st.st_mode)))
		rc = sl_landlock_add_fd_rule(rs, fd, (want_dir ? DIR_RIGHTS : DEV_RIGHTS) & handled,
		                             want_dir);
	close(fd);
	return rc;
}

/* The per-GPU nodes of index n. */
static int grant_one(int rs, uint64_t handled, const char *dev, uint32_t n)
{
	char name[64], dri[512];
	snprintf(dri, sizeof dri, "%s/dri", dev);
	snprintf(name, sizeof name, "nvidia%u", n);
	int rc = grant(rs, handled, dev, name, false);
	snprintf(name, sizeof name, "card%u", n);
	if (!rc)
		rc = grant(rs, handled, dri, name, false);
	snprintf(name, sizeof name, "renderD%u", 128 + n);
	return rc ? rc : grant(rs, handled, dri, name, false);
}

/* The number in "nvidiaN" (digits only after the prefix), or -1. */
static long node_index(const char *name)
{
	if (strncmp(name, "nvidia", 6) != 0 || !name[6])
		return -1;
	char *end;
	long v = strtol(name + 6, &end, 10);
	return *end || v < 0 || v > 255 ? -1 : v;
}

/* Every GPU: each nvidiaN of dev, and DRM nodes 0..63. */
static int grant_all(int rs, uint64_t handled, const char *dev)
{
	DIR *d = opendir(dev);
	int rc = 0;
	for (struct dirent *e; d && !rc && (e = readdir(d));) {
		long n = node_index(e->d_name);
		if (n >= 0)
			rc = grant_one(rs, handled, dev, (uint32_t)n);
	}
	if (d)
		closedir(d);
	for (uint32_t n = 0; !rc && n < SL_MAX_GPUS; n++)
		rc = grant_one(rs, handled, dev, n);
	return rc;
}

int sl_gpu_grant(int rs, uint64_t handled, const struct sandlock_sandbox *cfg, int *err,
                 char **msg)
{
	if (!cfg->gpu_on)
		return 0;
	const char *dev = dev_dir();
	int rc = 0;
	for (size_t i = 0; !rc && i < sizeof k_control / sizeof k_control[0]; i++)
		rc = grant(rs, handled, dev, k_control[i], false);
	if (!rc)
		rc = grant(rs, handled, dev, "nvidia-caps", true);
	if (!rc && cfg->n_gpus == 0)
		rc = grant_all(rs, handled, dev);
	for (size_t i = 0; !rc && i < cfg->n_gpus; i++)
		rc = grant_one(rs, handled, dev, cfg->gpus[i]);
	if (rc < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "gpu_devices: landlock_add_rule: %s",
		               strerror(-rc));
	return 0;
}

bool sl_gpu_visible(const struct sandlock_sandbox *cfg, char *out, size_t cap)
{
	if (!cfg->gpu_on || cfg->n_gpus == 0 || cap == 0)
		return false;
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; i < cfg->n_gpus && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s%u", i ? "," : "", cfg->gpus[i]);
	return len < cap;
}
