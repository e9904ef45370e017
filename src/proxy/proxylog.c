/*
 * proxylog.c — the egress log: one JSON object per line for every
 * request the proxy judged (and every TLS connection judged by its SNI),
 * written with one write(2) each so lines of concurrent connections
 * never interleave.  To http_log (a file, appended) and/or http_log_fd
 * (the CLI's --trace gives its stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy/proxyint.h"

struct px_log {
	int fd;  /* http_log's file, -1: none */
	int fd2; /* http_log_fd's duplicate (--trace: stderr), -1: none */
};

struct px_log *px_log_open(const struct sl_httpcfg *h, char **msg)
{
	struct px_log *l = calloc(1, sizeof *l);
	if (!l) {
		*msg = sl_strdup("out of memory");
		return NULL;
	}
	l->fd = l->fd2 = -1;
	if (h->log) {
		l->fd = open(h->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (l->fd < 0) {
			*msg = sl_asprintf("http_log: cannot open '%s': %s", h->log, strerror(errno));
			free(l);
			return NULL;
		}
		l->fd = sl_fd_high(l->fd);
	}
	if (h->log_fd >= 0) {
		l->fd2 = sl_fd_high(fcntl(h->log_fd, F_DUPFD_CLOEXEC, 3));
		if (l->fd2 < 0) {
			*msg = sl_asprintf("http_log_fd: fd %d: %s", h->log_fd, strerror(errno));
			px_log_close(l);
			return NULL;
		}
	}
	return l;
}

/* s as a JSON string (quotes included) appended to b. */
static void json_str(sl_buf *b, const char *s)
{
	if (!s) {
		sl_buf_append(b, "null", 4);
		return;
	}
	sl_buf_append(b, "\"", 1);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		char esc[8];
		if (ch == '"' || ch == '\\') {
			esc[0] = '\\';
			esc[1] = (char)ch;
			sl_buf_append(b, esc, 2);
		} else if (ch < 0x20 || ch == 0x7f) {
			snprintf(esc, sizeof esc, "\\u%04x", ch);
			sl_buf_append(b, esc, 6);
		} else {
			sl_buf_append(b, s, 1);
		}
	}
	sl_buf_append(b, "\"", 1);
}

static void field(sl_buf *b, const char *key, const char *val)
{
	char k[32];
	snprintf(k, sizeof k, ",\"%s\":", key);
	sl_buf_append(b, k, strlen(k));
	json_str(b, val);
}

/* Best effort: a full disk loses log lines, never requests. */
static void put(int fd, const void *p, size_t n)
{
	if (fd >= 0 && write(fd, p, n) < 0) {
		/* nothing more to do */
	}
}

void px_log_write(struct px_log *l, const struct px_logrec *r)
{
	if (!l || (l->fd < 0 && l->fd2 < 0))
		return;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	struct tm tm;
	gmtime_r(&ts.tv_sec, &tm);
	char head[160];
	snprintf(head, sizeof head, "{\"event\":\"http\",\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"pid\":%d",
	         tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	         ts.tv_nsec / 1000000, (int)r->pid);
	sl_buf b = { 0 };
	sl_buf_append(&b, head, strlen(head));
	field(&b, "scheme", r->scheme);
	field(&b, "method", r->method);
	field(&b, "host", r->host);
	char tail[160];
	snprintf(tail, sizeof tail, ",\"port\":%u", r->port);
	sl_buf_append(&b, tail, strlen(tail));
	field(&b, "path", r->path);
	field(&b, "decision", r->decision);
	field(&b, "rule", r->rule);
	field(&b, "reason", r->reason);
	snprintf(tail, sizeof tail, ",\"status\":%d,\"bytes_out\":%llu,\"bytes_in\":%llu}\n",
	         r->status, (unsigned long long)r->bytes_out, (unsigned long long)r->bytes_in);
	sl_buf_append(&b, tail, strlen(tail));
	if (b.data) {
		put(l->fd, b.data, b.len);
		put(l->fd2, b.data, b.len);
	}
	sl_buf_free(&b);
}

void px_log_close(struct px_log *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	if (l->fd2 >= 0)
		close(l->fd2);
	free(l);
}
