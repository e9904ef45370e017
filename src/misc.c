/*
 * misc.c — syscall name/number lookup, Landlock ABI query, version.
 */
#include <seccomp.h>
#include <stdlib.h>

#include "launch/landlock.h"
#include "util.h"

SL_EXPORT int64_t sandlock_syscall_nr(const char *name)
{
	if (!name || !*name)
		return -1;
	int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name);
	return nr < 0 ? -1 : nr; /* libseccomp uses negative pseudo numbers too */
}

SL_EXPORT char *sandlock_syscall_name(int64_t nr)
{
	if (nr < 0 || nr > 0xffff)
		return NULL;
	/* libseccomp returns a malloc()ed string: sandlock_string_free (free) owns it. */
	return seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, (int)nr);
}

SL_EXPORT int sandlock_landlock_abi_version(void)
{
	int abi = sl_landlock_abi();
	return abi < 1 ? -1 : abi;
}

SL_EXPORT const char *sandlock_version(void)
{
	return SANDLOCK_VERSION;
}

SL_EXPORT void sandlock_string_free(char *s)
{
	free(s);
}
