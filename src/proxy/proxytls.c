/*
 * proxytls.c — TLS for the proxy (OpenSSL): the server name of a client
 * hello, the CA it signs with (the caller's http_ca/http_key, or one
 * made for the run whose key never leaves this process's memory), the
 * certificates minted per host, and both ends of a terminated
 * connection (the guest's, as that host; the upstream's, verified
 * against the host's trust store: SSL_CERT_FILE / SSL_CERT_DIR apply).
 * Both ends speak HTTP/1.1 only (ALPN), so the exchange stays one the
 * proxy can parse and judge.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "proxy/proxyint.h"

#define LEAF_CACHE 256

struct leaf {
	char host[256];
	X509 *cert;
};

struct px_tls {
	X509 *ca;
	EVP_PKEY *ca_key;
	EVP_PKEY *leaf_key; /* one key for every minted certificate */
	char *ca_pem;
	SSL_CTX *server, *client;
	pthread_mutex_t mu; /* the leaf cache */
	struct leaf cache[LEAF_CACHE];
	size_t ncache, next;
};

/* ---------------- the client hello ---------------- */

static uint32_t be(const unsigned char *p, int n)
{
	uint32_t v = 0;
	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* The server_name extension (ext, n bytes) into out: 1, or -1. */
static int sni_ext(const unsigned char *ext, size_t n, char *out, size_t cap)
{
	if (n < 5 || be(ext, 2) + 2 != n || ext[2] != 0)
		return -1;
	size_t l = be(ext + 3, 2);
	if (l == 0 || l + 5 > n || l >= cap)
		return -1;
	for (size_t i = 0; i < l; i++) {
		char ch = (char)tolower(ext[5 + i]);
		if (!(isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_'))
			return -1;
		out[i] = ch;
	}
	out[l] = '\0';
	if (l > 1 && out[l - 1] == '.')
		out[l - 1] = '\0';
	return 1;
}

int px_tls_sni(const unsigned char *b, size_t n, char *out, size_t cap)
{
	if (n < 5)
		return 0;
	if (b[0] != 0x16 || b[1] != 3)
		return -1;
	size_t rec = be(b + 3, 2);
	if (n < 5 + rec)
		return 0;
	const unsigned char *h = b + 5, *end = h + rec;
	if (rec < 4 || h[0] != 1 || be(h + 1, 3) + 4 > rec)
		return -1; /* not a client hello, or one spanning records */
	const unsigned char *p = h + 4 + 2 + 32; /* version, random */
	if (p + 1 > end)
		return -1;
	p += 1 + p[0]; /* session id */
	if (p + 2 > end)
		return -1;
	p += 2 + be(p, 2); /* cipher suites */
	if (p + 1 > end)
		return -1;
	p += 1 + p[0]; /* compression */
	if (p + 2 > end)
		return -1;
	const unsigned char *ee = p + 2 + be(p, 2);
	if (ee > end)
		return -1;
	for (p += 2; p + 4 <= ee;) {
		uint32_t type = be(p, 2), len = be(p + 2, 2);
		if (p + 4 + len > ee)
			return -1;
		if (type == 0)
			return sni_ext(p + 4, len, out, cap);
		p += 4 + len;
	}
	return -1;
}

/* ---------------- certificates ---------------- */

static EVP_PKEY *new_key(void)
{
	return EVP_EC_gen("P-256");
}

static bool add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	X509_EXTENSION *ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	bool ok = ex && X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return ok;
}

/* A certificate for key named cn, valid from an hour ago for days. */
static X509 *new_cert(EVP_PKEY *key, const char *cn, long days)
{
	X509 *c = X509_new();
	unsigned char serial[16];
	BIGNUM *bn = NULL;
	if (!c || RAND_bytes(serial, sizeof serial) != 1)
		goto fail;
	serial[0] &= 0x7f; /* positive */
	bn = BN_bin2bn(serial, sizeof serial, NULL);
	if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(c)) || !X509_set_version(c, 2) ||
	    !X509_gmtime_adj(X509_getm_notBefore(c), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(c), days * 86400) || !X509_set_pubkey(c, key))
		goto fail;
	X509_NAME *name = X509_get_subject_name(c);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"sandlock", -1,
	                                -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0))
		goto fail;
	BN_free(bn);
	return c;
fail:
	BN_free(bn);
	X509_free(c);
	return NULL;
}

static X509 *make_ca(EVP_PKEY *key)
{
	char cn[64];
	unsigned char r[4] = { 0 };
	RAND_bytes(r, sizeof r);
	snprintf(cn, sizeof cn, "sandlock run CA %02x%02x%02x%02x", r[0], r[1], r[2], r[3]);
	X509 *c = new_cert(key, cn, 30);
	if (c && X509_set_issuer_name(c, X509_get_subject_name(c)) &&
	    add_ext(c, c, NID_basic_constraints, "critical,CA:TRUE") &&
	    add_ext(c, c, NID_key_usage, "critical,keyCertSign,cRLSign") &&
	    add_ext(c, c, NID_subject_key_identifier, "hash") && X509_sign(c, key, EVP_sha256()))
		return c;
	X509_free(c);
	return NULL;
}

static X509 *mint(struct px_tls *t, const char *host)
{
	X509 *c = new_cert(t->leaf_key, host, 7);
	unsigned char ip[16];
	bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	char *san = sl_asprintf("%s:%s", literal ? "IP" : "DNS", host);
	bool ok = c && san && X509_set_issuer_name(c, X509_get_subject_name(t->ca)) &&
	          add_ext(c, t->ca, NID_subject_alt_name, san) &&
	          add_ext(c, t->ca, NID_basic_constraints, "critical,CA:FALSE") &&
	          add_ext(c, t->ca, NID_ext_key_usage, "serverAuth") &&
	          add_ext(c, t->ca, NID_authority_key_identifier, "keyid") &&
	          X509_sign(c, t->ca_key, EVP_sha256());
	free(san);
	if (!ok) {
		X509_free(c);
		return NULL;
	}
	return c;
}

/* The certificate for host (a new reference), minted once. */
static X509 *leaf_for(struct px_tls *t, const char *host)
{
	X509 *c = NULL;
	pthread_mutex_lock(&t->mu);
	for (size_t i = 0; i < t->ncache && !c; i++)
		if (strcmp(t->cache[i].host, host) == 0)
			c = t->cache[i].cert;
	if (!c && (c = mint(t, host))) {
		struct leaf *l = &t->cache[t->ncache < LEAF_CACHE ? t->ncache++ : t->next++ % LEAF_CACHE];
		X509_free(l->cert);
		snprintf(l->host, sizeof l->host, "%s", host);
		l->cert = c;
	}
	if (c)
		X509_up_ref(c);
	pthread_mutex_unlock(&t->mu);
	return c;
}

/* ---------------- contexts ---------------- */

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
	(void)ssl;
	(void)arg;
	for (unsigned i = 0; i + 1 <= inlen;) {
		unsigned l = in[i];
		if (i + 1 + l > inlen)
			break;
		if (l == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
		i += 1 + l;
	}
	return SSL_TLSEXT_ERR_NOACK; /* no ALPN: HTTP/1.1 is the default */
}

static int make_contexts(struct px_tls *t, char **msg)
{
	t->server = SSL_CTX_new(TLS_server_method());
	t->client = SSL_CTX_new(TLS_client_method());
	if (!t->server || !t->client) {
		*msg = sl_strdup("http proxy: cannot make TLS contexts");
		return -1;
	}
	SSL_CTX_set_min_proto_version(t->server, TLS1_2_VERSION);
	SSL_CTX_set_min_proto_version(t->client, TLS1_2_VERSION);
	SSL_CTX_set_alpn_select_cb(t->server, alpn_select, NULL);
	SSL_CTX_set_mode(t->server, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	SSL_CTX_set_mode(t->client, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	static const unsigned char h11[] = "\x08http/1.1";
	SSL_CTX_set_alpn_protos(t->client, h11, sizeof h11 - 1);
	SSL_CTX_set_verify(t->client, SSL_VERIFY_PEER, NULL);
	if (!SSL_CTX_set_default_verify_paths(t->client)) {
		*msg = sl_strdup("http proxy: cannot load the host's trust store");
		return -1;
	}
	return 0;
}

static int load_ca(struct px_tls *t, const struct sl_httpcfg *h, char **msg)
{
	FILE *f = fopen(h->ca, "re");
	if (f) {
		t->ca = PEM_read_X509(f, NULL, NULL, NULL);
		fclose(f);
	}
	FILE *k = fopen(h->key, "re");
	if (k) {
		t->ca_key = PEM_read_PrivateKey(k, NULL, NULL, NULL);
		fclose(k);
	}
	if (!t->ca || !t->ca_key) {
		*msg = sl_asprintf("http_ca/http_key: cannot read a PEM %s from '%s'",
		                   !t->ca ? "certificate" : "private key", !t->ca ? h->ca : h->key);
		return -1;
	}
	if (X509_check_private_key(t->ca, t->ca_key) != 1) {
		*msg = sl_asprintf("http_key '%s' is not the key of http_ca '%s'", h->key, h->ca);
		return -1;
	}
	return 0;
}

static int export_ca(struct px_tls *t, const struct sl_httpcfg *h, char **msg)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data = NULL;
	long n = b && PEM_write_bio_X509(b, t->ca) ? BIO_get_mem_data(b, &data) : 0;
	if (n > 0)
		t->ca_pem = strndup(data, (size_t)n);
	BIO_free(b);
	if (!t->ca_pem) {
		*msg = sl_strdup("http proxy: cannot encode the CA certificate");
		return -1;
	}
	if (!h->ca_out)
		return 0;
	int fd = open(h->ca_out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok = fd >= 0 && write(fd, t->ca_pem, strlen(t->ca_pem)) == (ssize_t)strlen(t->ca_pem);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		*msg = sl_asprintf("http_ca_out: cannot write '%s': %s", h->ca_out, strerror(errno));
		return -1;
	}
	return 0;
}

struct px_tls *px_tls_new(const struct sl_httpcfg *h, char **msg)
{
	struct px_tls *t = calloc(1, sizeof *t);
	if (!t) {
		*msg = sl_strdup("out of memory");
		return NULL;
	}
	pthread_mutex_init(&t->mu, NULL);
	int rc;
	if (h->ca) {
		rc = load_ca(t, h, msg);
	} else {
		t->ca_key = new_key();
		t->ca = t->ca_key ? make_ca(t->ca_key) : NULL;
		rc = t->ca ? 0 : -1;
		if (rc)
			*msg = sl_strdup("http proxy: cannot make the run's CA");
	}
	if (rc == 0 && !(t->leaf_key = new_key())) {
		*msg = sl_strdup("http proxy: cannot make a key");
		rc = -1;
	}
	if (rc == 0)
		rc = make_contexts(t, msg);
	if (rc == 0)
		rc = export_ca(t, h, msg);
	ERR_clear_error();
	if (rc) {
		px_tls_free(t);
		return NULL;
	}
	return t;
}

void px_tls_free(struct px_tls *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->ncache; i++)
		X509_free(t->cache[i].cert);
	X509_free(t->ca);
	EVP_PKEY_free(t->ca_key);
	EVP_PKEY_free(t->leaf_key);
	SSL_CTX_free(t->server);
	SSL_CTX_free(t->client);
	free(t->ca_pem);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

const char *px_tls_ca_pem(const struct px_tls *t)
{
	return t->ca_pem;
}

/* ---------------- handshakes ---------------- */

/* Drive a non-blocking handshake to its end before the deadline. */
static int handshake(SSL *ssl, int fd, bool server, int64_t deadline)
{
	for (;;) {
		int r = server ? SSL_accept(ssl) : SSL_connect(ssl);
		if (r == 1)
			return 0;
		int e = SSL_get_error(ssl, r);
		short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
		int64_t left = deadline - sl_now_ms();
		if (!ev || left <= 0)
			return -1;
		struct pollfd p = { .fd = fd, .events = ev };
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -1;
	}
}

int px_tls_accept(struct px_tls *t, struct px_conn *c)
{
	X509 *cert = leaf_for(t, c->sni);
	SSL *ssl = cert ? SSL_new(t->server) : NULL;
	int rc = -1;
	if (ssl && SSL_use_certificate(ssl, cert) == 1 && SSL_use_PrivateKey(ssl, t->leaf_key) == 1 &&
	    SSL_add1_chain_cert(ssl, t->ca) == 1 && SSL_set_fd(ssl, c->client.fd) == 1 &&
	    handshake(ssl, c->client.fd, true, sl_now_ms() + PX_HEAD_MS) == 0) {
		c->client.ssl = ssl;
		c->tls = true;
		rc = 0;
	} else {
		SSL_free(ssl);
	}
	X509_free(cert);
	ERR_clear_error();
	return rc;
}

int px_tls_connect(struct px_tls *t, struct px_conn *c, const char *host, char **why)
{
	SSL *ssl = SSL_new(t->client);
	unsigned char ip[16];
	bool literal = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
	bool ok = ssl && SSL_set_fd(ssl, c->up.fd) == 1 &&
	          (literal ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
	                   : SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1);
	if (ok && handshake(ssl, c->up.fd, false, sl_now_ms() + PX_CONNECT_MS) == 0) {
		c->up.ssl = ssl;
		ERR_clear_error();
		return 0;
	}
	long v = ssl ? SSL_get_verify_result(ssl) : 0;
	*why = sl_asprintf("TLS to '%s' failed: %s", host,
	                   v != X509_V_OK ? X509_verify_cert_error_string(v) : "handshake error");
	SSL_free(ssl);
	ERR_clear_error();
	return -1;
}

bool sl_proxy_tls_probe(char *desc, size_t cap)
{
	snprintf(desc, cap, "%s", OpenSSL_version(OPENSSL_VERSION));
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	EVP_PKEY *k = new_key();
	bool ok = ctx && k;
	SSL_CTX_free(ctx);
	EVP_PKEY_free(k);
	ERR_clear_error();
	return ok;
}
