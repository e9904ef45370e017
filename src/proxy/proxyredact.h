/*
 * proxyredact.h — masking an injected credential in the response the
 * guest gets.  A server that echoes request headers (a debugging
 * endpoint, an error page quoting the request) would otherwise hand the
 * secret the proxy added straight back to the guest.  Every occurrence of
 * the secret's forms (the value, and the header or query encoding it was
 * sent in) is overwritten with 'x' bytes of the same length, so framing
 * (Content-Length, chunk sizes) stays right.  Occurrences split across a
 * chunk boundary of a chunked body, or inside compressed bodies, are not
 * seen.
 */
#ifndef SANDLOCK_PROXYREDACT_H
#define SANDLOCK_PROXYREDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

#define PX_REDACT_MAX 3

struct px_redact {
	char *needle[PX_REDACT_MAX];
	size_t len[PX_REDACT_MAX];
	size_t n, maxlen;
	sl_buf pend; /* [0, sent) went out last time; the rest is held back */
	size_t sent;
};

/* Arm r with up to PX_REDACT_MAX strings (NULL entries skipped): 0 or -1. */
int px_redact_init(struct px_redact *r, const char *const *needles, size_t n);
bool px_redact_active(const struct px_redact *r);
/* Take n bytes of the response; *out / *outn: what may go to the guest now
 * (masked; valid until the next call).  last: nothing follows, flush all. */
int px_redact_feed(struct px_redact *r, const char *in, size_t n, bool last, const char **out,
                   size_t *outn);
void px_redact_free(struct px_redact *r);

#endif /* SANDLOCK_PROXYREDACT_H */
