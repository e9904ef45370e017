/*
 * probe.h — the one reporting convention of the probe helpers (escape,
 * contain, netprobe): "ok" and exit 0 when the call got through, else
 * "errno=NAME" and exit 1, so tests compare the guest's own words.
 */
#ifndef SANDLOCK_TEST_PROBE_H
#define SANDLOCK_TEST_PROBE_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* ASan builds: LeakSanitizer needs ptrace and a /proc that the probes'
 * sandboxes do not grant, and would turn a clean exit into an abort. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

static inline int report(long rc)
{
	if (rc >= 0) {
		puts("ok");
		return 0;
	}
	const char *n = strerrorname_np(errno);
	printf("errno=%s\n", n ? n : "?");
	return 1;
}

#endif
