/*
 * openerint.h — what the opener's files share (opener.c: the confined
 * thread and the opener's life; opencall.c: one on-behalf open).  Not
 * for other modules: opener.h is the opener's interface.
 */
#ifndef SANDLOCK_OPENERINT_H
#define SANDLOCK_OPENERINT_H

#include <linux/openat2.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "opener/opener.h"

/* One request to the opener thread: an openat2, or a bind. */
struct sl_open_req {
	int base;            /* AT_FDCWD or our fd */
	const char *path;
	struct open_how how;
	bool set_umask;
	mode_t umask;
	bool local;          /* performed by the calling thread (local_self) */
	/* A bind instead of an open (sl_opener_bind_socket): sock to addr, from cwd. */
	bool bind;
	int sock, cwd;
	const struct sockaddr *addr;
	socklen_t alen;
	int fd, err;         /* the answer */
	bool done;           /* under mu: fd, err are final */
};

struct sl_opener {
	pthread_t thread;
	bool started;
	pthread_mutex_t call_lock; /* one request at a time */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct sl_open_req *req;     /* pending request, NULL when idle */
	bool ready, stop;
	int setup_err;       /* 0 once confined */
	int ruleset_fd;      /* only until the thread is confined */
	int taskdir;         /* /proc/self/task: which tids are ours */
	int listener;        /* bound listener, -1 */
	bool fixed_ids;      /* real = effective = saved ids: the caller's are ours */
	bool proc_guard;     /* /proc readable: sl_proc_policy on every open */
	bool proc_fast;      /* the caller's own /proc/TID opened here, see local_self */
	pid_t init;          /* the sandbox's init, for sl_proc_policy */
	int procfd;          /* /proc, for sl_proc_policy; -1 */
	sl_opener_serve_fn serve; /* files served instead (opener.h), or NULL */
	void *serve_ud;
	const struct sl_view *view; /* virtual chroot: paths are guest paths; NULL */
};

/* The opener thread's openat2 of r, also run by a supervisor thread for
 * the caller's own /proc/TID (opencall.c, caps lowered). */
void sl_opener_perform(struct sl_open_req *r);
/* Hand r to the opener thread and wait for its answer. */
void sl_opener_submit(struct sl_opener *op, struct sl_open_req *r);

#endif
