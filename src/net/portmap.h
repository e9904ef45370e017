/*
 * portmap.h — one run's virtual->real TCP/UDP port map (port_remap).
 *
 * With port_remap each sandbox has its own port space: a bind to virtual
 * port V is performed on the caller's behalf, on V itself when it is free
 * or else on a port the kernel picks (R).  The map is filled by the
 * socket builtin (builtins/netdest/) on the supervisor thread and read
 * by the caller's thread (sandlock_handle_ports): it has its own lock.
 */
#ifndef SANDLOCK_PORTMAP_H
#define SANDLOCK_PORTMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_portmap;

struct sl_portmap *sl_portmap_new(void);
void sl_portmap_free(struct sl_portmap *m);
/* Record V -> R (R == V too: the port is then the sandbox's).  0 or -1 (OOM). */
int sl_portmap_add(struct sl_portmap *m, uint16_t virt, uint16_t real);
/* The real port of virtual port v, or 0. */
uint16_t sl_portmap_real(struct sl_portmap *m, uint16_t virt);
/* The virtual port of real port r, or 0. */
uint16_t sl_portmap_virt(struct sl_portmap *m, uint16_t real);
/* The remapped entries (V != R): up to max pairs into virt[]/real[];
 * returns how many there are (may exceed max). */
size_t sl_portmap_remapped(struct sl_portmap *m, uint16_t *virt, uint16_t *real, size_t max);

/* Rewrite the real ports of text (a /proc/net/tcp or tcp6 table, NUL-
 * terminated) to their virtual ports, in place: the local_address and
 * rem_address columns, "ADDR:PORT" with PORT four hex digits. */
void sl_portmap_rewrite_proc_net(struct sl_portmap *m, char *text);

#endif /* SANDLOCK_PORTMAP_H */
