/*
 * sock.h — unix sockets bound under the copy-on-write workdir (sock.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_SOCK_H
#define SANDLOCK_BUILTINS_COW_SOCK_H

#include "builtins/cow/state.h"
#include "supervisor/services.h"

/* Offer the run's netdest the layer's socket places (services.h). */
void sl_cowb_sock_offer(struct cow_state *s, struct sl_services *sv);

#endif
