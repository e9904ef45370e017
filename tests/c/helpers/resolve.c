/*
 * resolve — a name lookup through the C library's own resolver, as a
 * program built against it does: getaddrinfo(NAME).  Built twice: with
 * glibc (the helper rule) and statically with musl (resolve-musl, where
 * musl-gcc exists), whose resolver binds an unconnected UDP socket and
 * sends each query with an address (sendto), the case a container
 * without pidfd_getfd made hard (docs/containers.md).
 *   resolve NAME
 * Prints the first IPv4 address and exits 0, or "EAI=N errno=NAME" and
 * exits 1.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: resolve NAME\n");
		return 2;
	}
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	errno = 0;
	int rc = getaddrinfo(argv[1], "80", &hints, &res);
	int saved = errno;
	for (struct addrinfo *ai = res; !rc && ai; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET)
			continue;
		char buf[INET_ADDRSTRLEN];
		const struct sockaddr_in *in = (const void *)ai->ai_addr;
		puts(inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf));
		freeaddrinfo(res);
		return 0;
	}
	if (res)
		freeaddrinfo(res);
	printf("EAI=%d errno=%s\n", rc, saved ? strerror(saved) : "0");
	return 1;
}
