/*
 * proxy.h — the supervisor's HTTP/HTTPS proxy (docs/http.md).
 *
 * With http_allow / http_deny rules, a TCP connect of the guest to an
 * intercepted port (80, 443 with TLS interception, http_ports) is
 * performed on its behalf towards this proxy instead (builtins/netdest.c),
 * which learns the original destination from sl_proxy_expect.  The proxy
 * runs in threads of its own (an accept thread, one thread per
 * connection), never on the notification thread: a slow or hostile
 * client stalls nothing but its own connection.
 */
#ifndef SANDLOCK_PROXY_H
#define SANDLOCK_PROXY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

struct sandlock_sandbox;
struct sl_proxy;

/* Start the proxy of a run (listening on loopback, threads started):
 * NULL with *msg (heap) on failure. */
struct sl_proxy *sl_proxy_new(const struct sandlock_sandbox *cfg, char **msg);
/* Stop every thread (open connections are cut) and free. */
void sl_proxy_free(struct sl_proxy *px);

/* Is a TCP connect to this port redirected to the proxy? */
bool sl_proxy_intercepts(const struct sl_proxy *px, uint16_t port);
/* Where a socket of this family connects instead (the proxy's listener). */
int sl_proxy_target(const struct sl_proxy *px, int family, struct sockaddr_storage *to,
                    socklen_t *len);
/* Our duplicate sockfd of the guest's socket was just connected to the
 * proxy: remember that the connection from its local address was meant
 * for orig, by pid.  0 or -errno. */
int sl_proxy_expect(struct sl_proxy *px, int sockfd, const struct sockaddr *orig,
                    socklen_t origlen, pid_t pid);
/* The PEM certificate of the CA the proxy signs with (NULL without TLS
 * interception): spliced into the trust bundles the guest opens. */
const char *sl_proxy_ca_pem(const struct sl_proxy *px);

/* For `sandlock check`: can this build terminate TLS here (a context and
 * an EC key made)?  desc gets the TLS library's version. */
bool sl_proxy_tls_probe(char *desc, size_t cap);
/* http_parser_version() of the HTTP parser linked in. */
unsigned long sl_http_parser_version(void);

#endif /* SANDLOCK_PROXY_H */
