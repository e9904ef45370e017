/*
 * execcheck.h — did an exec run with the argv that was checked?  The
 * image a process runs after execve, read while it is stopped before its
 * first instruction (builtins/policy.c holds it there).
 */
#ifndef SANDLOCK_EXECCHECK_H
#define SANDLOCK_EXECCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What tells one image of a process from the next: the 16 random bytes
 * the kernel puts on every new image's stack (auxv AT_RANDOM), and where. */
struct sl_exec_image {
	uint64_t at;
	unsigned char bytes[16];
	bool ok;
};

/* The image pid runs now (ok false when it cannot be read). */
void sl_exec_image(pid_t pid, struct sl_exec_image *img);

/* True unless pid provably still runs image before: a new image, or one
 * that can no longer be read. */
bool sl_exec_image_changed(pid_t pid, const struct sl_exec_image *before);

/* Does pid's new image run argv (len bytes, each string NUL-terminated)?
 * Its /proc/PID/cmdline is argv itself, or what the kernel makes of it
 * for a #! script (binfmt_script, nested or not): the interpreter line
 * (its first string the very program now running), then the file name
 * exec was given (auxv AT_EXECFN), then argv without its argv[0].  1 yes,
 * 0 no, -1 unreadable. */
int sl_exec_argv_is(pid_t pid, const char *argv, size_t len);

#endif
