/*
 * cowwrite.h — max_disk for the COW workdir: the calls that make a staged
 * file grow, performed on the caller's behalf and charged to the quota
 * (cow.h, sl_cow_charge) before they happen.
 *
 * The guest writes staged files through fds the supervisor injected (or
 * their duplicates), so a path check cannot see those writes: with
 * max_disk set the cow builtin also traps the fd calls that can grow a
 * file (sl_cowwrite_nrs) and hands them here.  A call on an fd that is
 * not a staged file is passed back to the kernel untouched.
 */
#ifndef SANDLOCK_COWWRITE_H
#define SANDLOCK_COWWRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "cow/cow.h"
#include "sandlock.h"

/* The syscalls to trap with a quota (negative entries: not on this arch). */
extern const int sl_cowwrite_nrs[];
extern const size_t sl_cowwrite_nrs_count;

/* True if n's syscall is one of sl_cowwrite_nrs. */
bool sl_cowwrite_is(int nr);

/* Perform n (one of sl_cowwrite_nrs) if its fd is a staged file: true
 * with *ret set (a byte count / 0, or -errno: ENOSPC past the quota).
 * false: not a staged file, the kernel performs it. */
bool sl_cowwrite(struct sl_cow *c, int listener, const sandlock_notif_t *n, sandlock_mem_t *mem,
                 long *ret);

#endif /* SANDLOCK_COWWRITE_H */
