/*
 * credentials.c — loading --credential NAME=SOURCE (credentials.h).
 * The value is read once, when the sandbox is built; a single trailing
 * newline of a file or fd is dropped (what `echo` and editors add).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder/credentials.h"
#include "util.h"

#define CRED_MAX (64 * 1024)

static char *read_all(int fd, size_t *len, char **why, const char *src)
{
	char *buf = malloc(CRED_MAX + 1);
	size_t n = 0;
	while (buf && n < CRED_MAX) {
		ssize_t r = read(fd, buf + n, CRED_MAX - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = sl_asprintf("cannot read %s: %s", src, strerror(errno));
			explicit_bzero(buf, CRED_MAX);
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (!buf)
		return NULL;
	if (n == CRED_MAX) {
		*why = sl_asprintf("%s is larger than %d bytes", src, CRED_MAX);
		explicit_bzero(buf, CRED_MAX);
		free(buf);
		return NULL;
	}
	if (n && buf[n - 1] == '\n')
		n--;
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* The secret of SOURCE, or NULL with *why. */
static char *load(const char *src, size_t *len, char **env_var, char **why)
{
	if (strncmp(src, "env:", 4) == 0) {
		const char *v = getenv(src + 4);
		if (!src[4] || !v) {
			*why = sl_asprintf("environment variable '%s' is not set", src + 4);
			return NULL;
		}
		*len = strlen(v);
		*env_var = sl_strdup(src + 4);
		return sl_strdup(v);
	}
	if (strncmp(src, "file:", 5) == 0) {
		int fd = open(src + 5, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			*why = sl_asprintf("cannot open '%s': %s", src + 5, strerror(errno));
			return NULL;
		}
		char *v = read_all(fd, len, why, src);
		close(fd);
		return v;
	}
	if (strncmp(src, "fd:", 3) == 0) {
		char *end;
		long n = strtol(src + 3, &end, 10);
		if (!src[3] || *end || n < 0 || n > 1 << 20) {
			*why = sl_asprintf("bad fd number in '%s'", src);
			return NULL;
		}
		/* Read through a duplicate: the caller's fd stays as it was. */
		int fd = fcntl((int)n, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			*why = sl_asprintf("fd %ld is not open", n);
			return NULL;
		}
		char *v = read_all(fd, len, why, src);
		close(fd);
		return v;
	}
	*why = sl_asprintf("unknown source '%s' (env:VAR, file:PATH or fd:N)", src);
	return NULL;
}

static bool grow(struct sl_credentials *r)
{
	if (r->n < r->cap)
		return true;
	size_t cap = r->cap ? 2 * r->cap : 4;
	struct sl_credential *v = reallocarray(r->v, cap, sizeof *v);
	if (!v)
		return false;
	r->v = v;
	r->cap = cap;
	return true;
}

int sl_credentials_add(struct sl_credentials *r, const char *spec, char **why)
{
	*why = NULL;
	const char *eq = strchr(spec, '=');
	if (!eq || eq == spec) {
		*why = sl_strdup("expected NAME=env:VAR, NAME=file:PATH or NAME=fd:N");
		return -1;
	}
	char *name = strndup(spec, (size_t)(eq - spec));
	if (!name)
		return -1;
	if (sl_credentials_find(r, name)) {
		*why = sl_asprintf("credential '%s' is given twice", name);
		free(name);
		return -1;
	}
	struct sl_credential c = { .name = name };
	c.value = load(eq + 1, &c.len, &c.env_var, why);
	if (!c.value || !grow(r)) {
		if (c.value)
			explicit_bzero(c.value, c.len);
		free(c.value);
		free(c.env_var);
		free(name);
		return -1;
	}
	if (c.len == 0 || memchr(c.value, '\n', c.len) || memchr(c.value, '\r', c.len)) {
		*why = sl_asprintf("credential '%s' is empty or spans lines", name);
		explicit_bzero(c.value, c.len);
		free(c.value);
		free(c.env_var);
		free(name);
		return -1;
	}
	r->v[r->n++] = c;
	return 0;
}

const struct sl_credential *sl_credentials_find(const struct sl_credentials *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].name, name) == 0)
			return &r->v[i];
	return NULL;
}

void sl_credentials_free(struct sl_credentials *r)
{
	for (size_t i = 0; i < r->n; i++) {
		if (r->v[i].value)
			explicit_bzero(r->v[i].value, r->v[i].len);
		free(r->v[i].value);
		free(r->v[i].name);
		free(r->v[i].env_var);
	}
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
}

int sl_credentials_copy(struct sl_credentials *to, const struct sl_credentials *from)
{
	for (size_t i = 0; i < from->n; i++) {
		const struct sl_credential *f = &from->v[i];
		if (!grow(to))
			return -1;
		struct sl_credential c = { sl_strdup(f->name), malloc(f->len + 1), f->len,
			                       f->env_var ? sl_strdup(f->env_var) : NULL };
		if (c.value)
			memcpy(c.value, f->value, f->len + 1);
		to->v[to->n++] = c; /* freed with the rest on failure */
		if (!c.name || !c.value || (f->env_var && !c.env_var))
			return -1;
	}
	return 0;
}
