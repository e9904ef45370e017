/*
 * portmap.c — the virtual->real port map of a port_remap run (portmap.h).
 * A run binds few ports: a small array searched linearly.  A virtual port
 * bound again (after its socket closed) keeps its latest real port.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/portmap.h"

struct pair {
	uint16_t virt, real;
};

struct sl_portmap {
	pthread_mutex_t mu;
	struct pair *v;
	size_t n, cap;
};

struct sl_portmap *sl_portmap_new(void)
{
	struct sl_portmap *m = calloc(1, sizeof(*m));
	if (m)
		pthread_mutex_init(&m->mu, NULL);
	return m;
}

void sl_portmap_free(struct sl_portmap *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m->v);
	free(m);
}

int sl_portmap_add(struct sl_portmap *m, uint16_t virt, uint16_t real)
{
	int rc = 0;
	pthread_mutex_lock(&m->mu);
	size_t i = 0;
	while (i < m->n && m->v[i].virt != virt)
		i++;
	/* A real port now bound for virt no longer stands for another one. */
	for (size_t k = 0; k < m->n; k++)
		if (k != i && m->v[k].real == real)
			m->v[k].real = 0;
	if (i == m->n && m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct pair *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			rc = -1;
		else {
			m->v = v;
			m->cap = cap;
		}
	}
	if (rc == 0) {
		if (i == m->n)
			m->n++;
		m->v[i] = (struct pair){ virt, real };
	}
	pthread_mutex_unlock(&m->mu);
	return rc;
}

/* The other side of the pair whose real (or virtual) port is port; 0. */
static uint16_t other_side(struct sl_portmap *m, uint16_t port, bool by_real)
{
	uint16_t r = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && !r; i++)
		if ((by_real ? m->v[i].real : m->v[i].virt) == port)
			r = by_real ? m->v[i].virt : m->v[i].real;
	pthread_mutex_unlock(&m->mu);
	return r;
}

uint16_t sl_portmap_real(struct sl_portmap *m, uint16_t virt)
{
	return other_side(m, virt, false);
}

uint16_t sl_portmap_virt(struct sl_portmap *m, uint16_t real)
{
	return other_side(m, real, true);
}

size_t sl_portmap_remapped(struct sl_portmap *m, uint16_t *virt, uint16_t *real, size_t max)
{
	size_t k = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n; i++) {
		if (!m->v[i].real || m->v[i].real == m->v[i].virt)
			continue;
		if (k < max) {
			virt[k] = m->v[i].virt;
			real[k] = m->v[i].real;
		}
		k++;
	}
	pthread_mutex_unlock(&m->mu);
	return k;
}

/* The port of one "ADDR:PORT" field at p (up to the next blank). */
static void rewrite_field(struct sl_portmap *m, char *p)
{
	char *end = p + strcspn(p, " \t\n");
	char *colon = memchr(p, ':', (size_t)(end - p));
	if (!colon || end - colon != 5)
		return;
	char hex[5];
	memcpy(hex, colon + 1, 4);
	hex[4] = 0;
	char *bad;
	unsigned long real = strtoul(hex, &bad, 16);
	uint16_t v = *bad == 0 ? sl_portmap_virt(m, (uint16_t)real) : 0;
	if (v) {
		char out[5];
		snprintf(out, sizeof out, "%04X", v);
		memcpy(colon + 1, out, 4); /* same width: the table stays aligned */
	}
}

void sl_portmap_rewrite_proc_net(struct sl_portmap *m, char *text)
{
	char *line = strchr(text, '\n'); /* the header line has no ports */
	while (line && *++line) {
		char *sl = line + strspn(line, " ");
		char *p = strchr(sl, ':'); /* "N:" then local, then remote */
		char *nl = strchr(line, '\n');
		if (p && (!nl || p < nl)) {
			p++;
			for (int col = 0; col < 2; col++) {
				p += strspn(p, " ");
				rewrite_field(m, p);
				p += strcspn(p, " \n");
			}
		}
		line = nl;
	}
}
