/*
 * launch.h — starting the sandboxed child (launch.c): prepare everything
 * that allocates before fork, fork a child that confines itself, fetch
 * its seccomp listener, and release it to run the command.
 */
#ifndef SANDLOCK_LAUNCH_H
#define SANDLOCK_LAUNCH_H

#include <linux/filter.h>
#include <sys/types.h>

#include "config.h"
#include "tty.h"

struct sl_launch {
	/* prepared before fork, owned */
	char *exe;   /* resolved executable path */
	char **argv; /* NULL-terminated */
	char **envp; /* NULL-terminated */
	int ruleset_fd;          /* -1 when running without Landlock */
	struct sock_fprog prog;
	const struct sandlock_sandbox *cfg;
	/* after start */
	pid_t pid;      /* child (the sandbox's init) pid == its process group id */
	int pidfd;      /* pidfd of the child */
	int listener;   /* seccomp user-notification fd */
	int out_fd;     /* read end of captured stdout, -1 if inherited */
	int err_fd;     /* read end of captured stderr, -1 if inherited */
	int sync_fd;    /* parent end of the socketpair: "ready" goes here */
	int scope_fd;   /* Landlock ruleset scoping signals, for the command (ABI >= 6), or -1 */
	struct sl_tty tty; /* inherit_stdio: terminal foreground hand-over */
};
/* Resolve argv[0], build argv/envp, Landlock ruleset and BPF program. */
int sl_launch_prepare(struct sl_launch *L, const struct sandlock_sandbox *cfg,
                      const char *const *argv, uint32_t argc, const int *trapped,
                      size_t ntrapped, int *err, char **msg);
/* Fork; child confines itself and announces its listener's fd number before
 * seccomp(); parent takes the listener with pidfd_getfd.
 * On return the child is blocked waiting for sl_launch_release. */
int sl_launch_start(struct sl_launch *L, int *err, char **msg);
/* Tell the child to start the command and become the sandbox's init
 * (after handing it the terminal's foreground, see sl_tty_start). */
int sl_launch_release(struct sl_launch *L);
/* Give the terminal back, close every fd, free every buffer (idempotent). Does not kill. */
void sl_launch_cleanup(struct sl_launch *L);

#endif /* SANDLOCK_LAUNCH_H */
