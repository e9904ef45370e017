/*
 * connwait.h — TCP connects performed on a blocking caller's behalf,
 * waited for off the supervisor thread.
 *
 * netdest performs every connect on its own duplicate of the caller's
 * socket (never CONTINUE: see netdest.c), starting it non-blocking.  A
 * caller whose socket is blocking must then see the kernel's blocking
 * connect: its call is answered once the handshake is over (0, or the
 * error), when its SO_SNDTIMEO runs out (EINPROGRESS) or when a signal
 * interrupts it (ERESTARTSYS or EINTR, as inet_stream_connect answers).
 * One thread per run waits for all of them; the supervisor thread goes
 * on serving the sandbox meanwhile.
 */
#ifndef SANDLOCK_CONNWAIT_H
#define SANDLOCK_CONNWAIT_H

#include <stdbool.h>
#include <sys/socket.h>

#include "sandlock.h"

/* Answers a waited call (the dispatcher's completion, like deferred.h's). */
typedef void (*sl_connwait_done_fn)(void *ctx, const sandlock_notif_t *n,
                                    sandlock_action_t *act);

struct sl_connwait;
/* No thread yet: it starts with the first call handed over.  NULL: OOM. */
struct sl_connwait *sl_connwait_new(sl_connwait_done_fn done, void *ctx);
/* Stop the thread (pending calls are dropped unanswered: the run is
 * over) and free.  NULL is fine. */
void sl_connwait_free(struct sl_connwait *w);

/* connect(2) of our socket fd (a duplicate of the caller's) without
 * waiting, whatever O_NONBLOCK the caller's open file has (set for the
 * call, put back at once).  connect's result (-1 with errno);
 * *blocking: the caller's file has no O_NONBLOCK. */
int sl_connwait_connect(int fd, const struct sockaddr *to, socklen_t len, bool *blocking);

/*
 * The connect of our socket fd to (to, len) was started non-blocking
 * for n's caller, whose socket blocks, and is in progress.  Either it is
 * over at once (returns its result: 0 or -errno), or the call is handed
 * to the thread, which owns fd from then on and answers n through the
 * completion: returns 1, fd closed (the thread keeps a duplicate).  A
 * result <= 0 leaves fd to the caller.
 */
long sl_connwait_wait(struct sl_connwait *w, int listener, const sandlock_notif_t *n, int fd,
                      const struct sockaddr_storage *to, socklen_t len);

#endif /* SANDLOCK_CONNWAIT_H */
