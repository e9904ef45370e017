/*
 * urandom.h — random_seed's /dev/urandom: a seeded stream per open.
 *
 * Each open gets the read end of a pipe; a feeder thread of the run
 * writes the open's own seeded stream (prng.h, stream number = the open's
 * rank in the run) into it as the reader drains it, so the stream has no
 * end and costs only what is read.  The bytes do not depend on timing:
 * each stream is written in order, in whole PIPE_BUF chunks.
 */
#ifndef SANDLOCK_URANDOM_H
#define SANDLOCK_URANDOM_H

#include <stdint.h>

struct sl_urandom;

struct sl_urandom *sl_urandom_new(uint64_t seed); /* NULL on OOM */
/* Stop the feeder, close every stream (readers then see end of file). */
void sl_urandom_free(struct sl_urandom *u);
/* The read end of the next stream (close-on-exec, blocking), or -errno. */
int sl_urandom_open(struct sl_urandom *u);

#endif /* SANDLOCK_URANDOM_H */
