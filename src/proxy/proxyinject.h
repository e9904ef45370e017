/*
 * proxyinject.h — the credential an --http-auth rule attaches to a
 * request (proxyinject.c), for proxyhttp.c.
 */
#ifndef SANDLOCK_PROXYINJECT_H
#define SANDLOCK_PROXYINJECT_H

#include <stddef.h>

#include "proxy/proxyint.h"

struct px_inject {
	const struct sl_authrule *rule; /* NULL: nothing injected */
	const struct sl_credential *cred;
	char *value; /* the header value (or query value), heap */
};

/* The credential the first matching --http-auth rule attaches to request
 * q of connection c (warns once when it goes out over cleartext); inj is
 * all zero when none matches.  Free with px_inject_free. */
void px_inject_prepare(struct px_conn *c, const struct sl_httpreq *q, struct px_inject *inj);
/* Wipe and free the value. */
void px_inject_free(struct px_inject *inj);
/* The header (name) the credential occupies, or NULL (none, or a query
 * credential). */
const char *px_inject_header(const struct px_inject *inj);
/* Append the origin-form target origin (len bytes) to o, with a query
 * credential added or replaced.  0 or -1. */
int px_inject_target(sl_buf *o, const char *origin, size_t len, const struct px_inject *inj);

#endif /* SANDLOCK_PROXYINJECT_H */
