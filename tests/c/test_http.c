/*
 * test_http.c — the HTTP proxy through the C ABI (docs/http.md), so that
 * `make asan` runs the proxy's parser, judging, credential and log code
 * under the sanitizers: curl inside the sandbox against a loopback origin
 * thread that records what reached it.  (The Python suites test_http*.py
 * cover the rest: TLS, smuggling, floods.)
 */
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* A one-request-per-connection origin: remembers each request's path and
 * whether it carried the injected credential. */
struct origin {
	int fd, port;
	pthread_t t;
	char seen[1024];
};

static void *origin_loop(void *arg)
{
	struct origin *o = arg;
	for (;;) {
		int c = accept(o->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		char req[4096];
		size_t n = 0;
		ssize_t r;
		while (n < sizeof req - 1 && (r = read(c, req + n, sizeof req - 1 - n)) > 0) {
			n += (size_t)r;
			req[n] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[n] = '\0';
		char path[256] = "";
		sscanf(req, "%*s %255s", path);
		size_t l = strlen(o->seen);
		snprintf(o->seen + l, sizeof o->seen - l, "%s%s;", path,
		         strstr(req, "Authorization: Bearer t0ken\r\n") ? "+auth" : "");
		char resp[512];
		int len = snprintf(resp, sizeof resp,
		                   "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s\n",
		                   strlen(path) + 1, path);
		if (write(c, resp, (size_t)len) < 0)
			perror("origin write");
		close(c);
	}
}

static bool origin_start(struct origin *o)
{
	memset(o, 0, sizeof *o);
	o->fd = tu_tcp_listener(&o->port);
	return o->fd >= 0 && pthread_create(&o->t, NULL, origin_loop, o) == 0;
}

static void origin_stop(struct origin *o)
{
	shutdown(o->fd, SHUT_RDWR);
	close(o->fd);
	pthread_join(o->t, NULL);
}

TEST(allowed_denied_and_credential_through_the_proxy)
{
	struct origin o;
	REQUIRE(origin_start(&o));
	setenv("SL_TEST_T0KEN", "t0ken", 1);
	int log[2];
	REQUIRE(pipe(log) == 0);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, "/dev/null");
	sandlock_sandbox_builder_http_port(b, (uint16_t)o.port);
	sandlock_sandbox_builder_http_allow(b, "GET localhost/ok/*");
	sandlock_sandbox_builder_http_deny(b, "* */ok/secret*");
	sandlock_sandbox_builder_credential(b, "t=env:SL_TEST_T0KEN");
	sandlock_sandbox_builder_http_auth(b, "GET localhost/ok/api* bearer t");
	sandlock_sandbox_builder_http_log_fd(b, log[1]);
	char sh[512];
	snprintf(sh, sizeof sh,
	         "for p in /ok/a /ok/api/1 /ok/secret /no/b; do "
	         "/usr/bin/curl -s http://localhost:%d$p; done; env | grep -c T0KEN",
	         o.port);
	sandlock_result_t *r = tu_run_sh(b, "/bin/sh", sh);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strstr(out, "/ok/a\n/ok/api/1\n"));
	CHECK(out && strstr(out, "refused by http_deny rule '* */ok/secret*'"));
	CHECK(out && strstr(out, "GET localhost/no/b refused: no http_allow rule matches it"));
	CHECK(out && strstr(out, "\n0\n")); /* the variable never reached the guest */
	CHECK(out && !strstr(out, "t0ken"));
	if (th_failed_now)
		fprintf(stderr, "  stdout: %s\n", out ? out : "(null)");
	sandlock_string_free(out);
	sandlock_result_free(r);
	/* Only the allowed requests reached the origin, the credential on one. */
	CHECK(tu_str_is(o.seen, "/ok/a;/ok/api/1+auth;"));
	close(log[1]);
	char lines[4096] = "";
	ssize_t n = read(log[0], lines, sizeof lines - 1);
	lines[n > 0 ? n : 0] = '\0';
	CHECK(strstr(lines, "\"path\":\"/ok/secret\",\"decision\":\"deny\""));
	CHECK(strstr(lines, "\"path\":\"/ok/a\",\"decision\":\"allow\",\"rule\":\"GET localhost/ok/*\""));
	close(log[0]);
	origin_stop(&o);
}

TEST(bad_http_options_fail_the_build_naming_them)
{
	char *why = sandlock_http_rule_error("GET");
	CHECK(why && strstr(why, "METHOD host/path"));
	sandlock_string_free(why);
	CHECK(sandlock_http_rule_error("* */a/*") == NULL);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_http_ca(b, "/etc/hostname");
	sandlock_sandbox_builder_http_allow(b, "GET localhost/*");
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_sandbox_build(b, &err, &msg) == NULL);
	CHECK(err == SANDLOCK_ERR_CONFLICT && msg && strstr(msg, "http_ca is set without http_key"));
	sandlock_string_free(msg);
	b = tu_system_builder();
	sandlock_sandbox_builder_http_port(b, 8080);
	msg = NULL;
	CHECK(sandlock_sandbox_build(b, &err, &msg) == NULL);
	CHECK(msg && strstr(msg, "needs at least one http_allow or http_deny rule"));
	sandlock_string_free(msg);
}


