/*
 * proxyredact.c — masking an injected credential in responses
 * (proxyredact.h).
 */
#include <stdlib.h>
#include <string.h>

#include "proxy/proxyredact.h"

int px_redact_init(struct px_redact *r, const char *const *needles, size_t n)
{
	memset(r, 0, sizeof *r);
	for (size_t i = 0; i < n && r->n < PX_REDACT_MAX; i++) {
		if (!needles[i] || !needles[i][0])
			continue;
		if (!(r->needle[r->n] = sl_strdup(needles[i])))
			return -1;
		r->len[r->n] = strlen(needles[i]);
		if (r->len[r->n] > r->maxlen)
			r->maxlen = r->len[r->n];
		r->n++;
	}
	return 0;
}

bool px_redact_active(const struct px_redact *r)
{
	return r->n > 0;
}

static void mask(struct px_redact *r, char *p, size_t n)
{
	for (size_t k = 0; k < r->n; k++)
		for (char *at = memmem(p, n, r->needle[k], r->len[k]); at;
		     at = memmem(at + r->len[k], (size_t)(p + n - at) - r->len[k], r->needle[k], r->len[k]))
			memset(at, 'x', r->len[k]);
}

int px_redact_feed(struct px_redact *r, const char *in, size_t n, bool last, const char **out,
                   size_t *outn)
{
	if (r->sent) { /* what went out last time leaves; the held-back tail stays */
		memmove(r->pend.data, r->pend.data + r->sent, r->pend.len - r->sent);
		r->pend.len -= r->sent;
		r->sent = 0;
	}
	if (n && sl_buf_append(&r->pend, in, n) < 0)
		return -1;
	if (r->pend.len)
		mask(r, (char *)r->pend.data, r->pend.len);
	/* A needle may begin in the last maxlen - 1 bytes: hold them back. */
	size_t keep = last ? 0 : r->pend.len < r->maxlen - 1 ? r->pend.len : r->maxlen - 1;
	*out = (const char *)r->pend.data;
	*outn = r->pend.len - keep;
	r->sent = *outn;
	return 0;
}

void px_redact_free(struct px_redact *r)
{
	for (size_t i = 0; i < r->n; i++) {
		explicit_bzero(r->needle[i], r->len[i]);
		free(r->needle[i]);
	}
	sl_buf_free(&r->pend);
	memset(r, 0, sizeof *r);
}
