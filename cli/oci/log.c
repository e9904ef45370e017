/*
 * log.c — error, warning and info lines for the engine.
 *
 * Engines read a failed runtime's reason from its stderr (conmon shows it
 * to the user) or from the --log file (containerd, CRI-O).  Warnings and
 * infos (an optional setting not honoured, a flag accepted and ignored)
 * go to the log file only, so they never mix into a container's output.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int log_fd = -1;
static bool log_json;
static bool quiet;

int oci_log_open(const char *path, const char *format)
{
	if (format && strcmp(format, "json") != 0 && strcmp(format, "text") != 0) {
		fprintf(stderr, "sandlock-oci: --log-format '%s': use text or json\n", format);
		return -1;
	}
	log_json = format && strcmp(format, "json") == 0;
	if (!path)
		return 0;
	log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (log_fd < 0) {
		fprintf(stderr, "sandlock-oci: --log '%s': %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

void oci_log_quiet(void)
{
	quiet = true;
}

int oci_log_fd(void)
{
	return log_fd;
}

/* msg with '"', '\\' and control characters escaped for a JSON string. */
static void json_escape(const char *msg, char *out, size_t cap)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)msg; *p && o + 7 < cap; p++) {
		if (*p == '"' || *p == '\\') {
			out[o++] = '\\';
			out[o++] = (char)*p;
		} else if (*p < 0x20) {
			o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *p);
		} else {
			out[o++] = (char)*p;
		}
	}
	out[o] = '\0';
}

static void emit(const char *level, bool to_stderr, const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof msg, fmt, ap);
	if (to_stderr && !quiet)
		fprintf(stderr, "sandlock-oci: %s\n", msg);
	if (log_fd < 0)
		return;
	char when[40];
	time_t now = time(NULL);
	struct tm tm;
	strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	char line[4096 + 128];
	if (log_json) {
		char esc[4096];
		json_escape(msg, esc, sizeof esc);
		snprintf(line, sizeof line, "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s\"}\n",
		         level, esc, when);
	} else {
		snprintf(line, sizeof line, "time=\"%s\" level=%s msg=\"%s\"\n", when, level, msg);
	}
	/* One write per line: lines of concurrent runtimes do not interleave. */
	if (write(log_fd, line, strlen(line)) < 0)
		return;
}

void oci_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("error", true, fmt, ap);
	va_end(ap);
}

void oci_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("warning", false, fmt, ap);
	va_end(ap);
}

void oci_info(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit("info", false, fmt, ap);
	va_end(ap);
}
