/*
 * credentials.h — secrets of --credential NAME=SOURCE, loaded into the
 * supervisor at build time and handed to the proxy (proxy*.c), which
 * attaches them to the requests an --http-auth rule names.  The guest
 * never gets them: not in its environment (an env: variable is removed
 * from it), not in a file it can open, not in its memory.
 */
#ifndef SANDLOCK_CREDENTIALS_H
#define SANDLOCK_CREDENTIALS_H

#include <stddef.h>

/* A secret loaded from --credential NAME=SOURCE. */
struct sl_credential {
	char *name;
	char *value; /* NUL-terminated; wiped when freed */
	size_t len;
	char *env_var; /* env:VAR: stripped from the guest's environment */
};
struct sl_credentials {
	struct sl_credential *v;
	size_t n, cap;
};
/* Load NAME=env:VAR|file:PATH|fd:N into r.  0, or -1 with *why (heap). */
int sl_credentials_add(struct sl_credentials *r, const char *spec, char **why);
const struct sl_credential *sl_credentials_find(const struct sl_credentials *r,
                                                const char *name);
/* A deep copy of from into (empty) to: 0 or -1 (OOM). */
int sl_credentials_copy(struct sl_credentials *to, const struct sl_credentials *from);
void sl_credentials_free(struct sl_credentials *r);

#endif /* SANDLOCK_CREDENTIALS_H */
