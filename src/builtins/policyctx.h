/*
 * policyctx.h — the policy_fn context (sandlock_policy_ctx_t): what the
 * policy builtin (policy.c) and the context's methods a callback calls
 * (policyctx.c) share.  Nothing else includes it.
 */
#ifndef SANDLOCK_BUILTIN_POLICYCTX_H
#define SANDLOCK_BUILTIN_POLICYCTX_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandlock.h"
#include "run/pause.h"
#include "supervisor/execcheck.h"

struct pol_ip {
	int family;
	unsigned char addr[16];
};

struct pol_denied {
	char *path; /* canonical */
	dev_t dev;  /* the inode it named when denied (ino 0: none) */
	ino_t ino;
};

struct sandlock_policy_ctx {
	sandlock_policy_fn fn;
	void *ud;
	pthread_mutex_t mu; /* the deny list is also read by the opener's check */
	struct pol_denied *denied;
	size_t ndenied;
	bool net_restricted;
	struct pol_ip *ips;
	size_t nips;
	bool kill;
	/* the freeze of an exec waiting for its answer */
	struct sl_freeze frozen;
	bool frozen_active;
	uint64_t frozen_id;
	pid_t frozen_tgid; /* the caller's process */
	char *seen;        /* the argv the callback allowed, each string NUL-ended */
	size_t seen_len;
	struct sl_exec_image before; /* the caller's image when it asked */
	/* the network call netdest may ask about (supervisor thread only) */
	uint64_t net_id;
	bool net_seen;
	/* tightened at run time by the reference's sandlock_ctx_* calls */
	pid_t init;          /* the sandbox's init, from the call being decided */
	uint32_t max_procs;  /* 0: max_processes as configured */
	uint64_t max_memory; /* 0: as configured */
	struct pol_pidnet {
		pid_t pid; /* a process (thread group) */
		struct pol_ip *ips;
		size_t n;
	} *pidnets;
	size_t npidnets;
};

/* ip is one of the n addresses of v. */
bool sl_pol_ip_in(const struct pol_ip *v, size_t n, const struct pol_ip *ip);

#endif /* SANDLOCK_BUILTIN_POLICYCTX_H */
