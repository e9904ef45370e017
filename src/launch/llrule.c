/*
 * llrule.c — one Landlock path_beneath rule on an open file (llrule.h):
 * the primitive landlock.c, devmin.c and gpu.c share, kept apart so that
 * the device grants landlock.c calls do not call back into it.
 */
#include <errno.h>
#include <unistd.h>

#include "compat.h"
#include "launch/llrule.h"

#define FS(x) LANDLOCK_ACCESS_FS_##x
/* Rights the kernel accepts on a rule whose target is not a directory. */
#define SL_FILE_RIGHTS (FS(EXECUTE) | FS(WRITE_FILE) | FS(READ_FILE) | FS(TRUNCATE) | FS(IOCTL_DEV))

int sl_landlock_add_fd_rule(int ruleset, int fd, uint64_t rights, bool is_dir)
{
	struct sl_ll_path_beneath_attr pb = {
		.allowed_access = is_dir ? rights : (rights & SL_FILE_RIGHTS),
		.parent_fd = fd,
	};
	if (!pb.allowed_access)
		return 0;
	if (syscall(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		return -errno;
	return 0;
}
