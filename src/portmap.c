/*
 * portmap.c — the virtual->real port map of a port_remap run (portmap.h).
 * A run binds few ports: a small array searched linearly.  A virtual port
 * bound again (after its socket closed) keeps its latest real port.
 */
#include <pthread.h>
#include <stdlib.h>

#include "portmap.h"

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

uint16_t sl_portmap_real(struct sl_portmap *m, uint16_t virt)
{
	uint16_t r = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && !r; i++)
		if (m->v[i].virt == virt)
			r = m->v[i].real;
	pthread_mutex_unlock(&m->mu);
	return r;
}

uint16_t sl_portmap_virt(struct sl_portmap *m, uint16_t real)
{
	uint16_t v = 0;
	pthread_mutex_lock(&m->mu);
	for (size_t i = 0; i < m->n && !v; i++)
		if (m->v[i].real == real)
			v = m->v[i].virt;
	pthread_mutex_unlock(&m->mu);
	return v;
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
