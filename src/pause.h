/*
 * pause.h — stopping and continuing a running sandbox as a whole (run.c,
 * sandlock_handle_pause / _resume).
 */
#ifndef SANDLOCK_PAUSE_H
#define SANDLOCK_PAUSE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * stop: SIGSTOP every descendant of init (init itself stays awake to reap
 * and to end the sandbox on request) until a scan finds all of them
 * stopped, so a process that forked just before its stop is caught too.
 * !stop: SIGCONT every descendant.  The caller guarantees init is its
 * unreaped child.  0, or -1 with errno.
 */
int sl_pause_tree(pid_t init, bool stop);

#endif /* SANDLOCK_PAUSE_H */
