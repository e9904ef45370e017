/*
 * dnsd — a one-answer DNS server for the resolver tests (the container
 * image has no DNS server): every A question is answered with ADDR, any
 * other type (AAAA) with no record, over UDP on 127.0.0.1:PORT.
 *   dnsd PORT ADDR SECONDS
 * Prints "ready" once bound, serves for SECONDS, then prints
 * "queries=N" and exits.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The answer to query q (n bytes) in out: 0 when q is no question. */
static size_t answer(const unsigned char *q, size_t n, struct in_addr ip, unsigned char *out)
{
	size_t i = 12;
	while (i < n && q[i])
		i += 1u + q[i]; /* the question's labels */
	if (n < 12 || i + 5 > n)
		return 0;
	int a = q[i + 1] == 0 && q[i + 2] == 1; /* QTYPE A */
	size_t qend = i + 5;
	memcpy(out, q, qend);
	const unsigned char head[10] = { 0x81, 0x80, 0, 1, 0, (unsigned char)a, 0, 0, 0, 0 };
	memcpy(out + 2, head, sizeof head);
	if (!a)
		return qend;
	/* name pointer to the question, A, IN, TTL 60, 4 bytes */
	const unsigned char rr[12] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4 };
	memcpy(out + qend, rr, sizeof rr);
	memcpy(out + qend + sizeof rr, &ip, 4);
	return qend + sizeof rr + 4;
}

int main(int argc, char **argv)
{
	struct in_addr ip;
	if (argc != 4 || inet_pton(AF_INET, argv[2], &ip) != 1) {
		fprintf(stderr, "usage: dnsd PORT ADDR SECONDS\n");
		return 2;
	}
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in me = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1])),
		                      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)&me, sizeof me) < 0) {
		perror("dnsd: bind");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	time_t end = time(NULL) + atoi(argv[3]);
	long queries = 0;
	while (time(NULL) < end) {
		struct pollfd p = { s, POLLIN, 0 };
		if (poll(&p, 1, 200) <= 0)
			continue;
		unsigned char q[512], out[600];
		struct sockaddr_storage from;
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(s, q, sizeof q, 0, (struct sockaddr *)&from, &fl);
		size_t len = n > 0 ? answer(q, (size_t)n, ip, out) : 0;
		if (len && sendto(s, out, len, 0, (struct sockaddr *)&from, fl) > 0)
			queries++;
	}
	printf("queries=%ld\n", queries);
	return 0;
}
