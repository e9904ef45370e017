/*
 * served.c — files the opener serves in place of the ones it opened, for
 * reading: the sandbox's name for the hostname files, the synthetic
 * /etc/hosts, trust bundles with the proxy's CA appended, /proc/net/tcp
 * with virtual ports, and the synthetic views of virtfiles.c.  Each is a
 * sealed memfd: the guest reads what we serve and can never change it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/portmap.h"
#include "opener/openerint.h"
#include "opener/procpolicy.h"
#include "opener/virtfiles.h"

/* The files that hold the host's name, as the opener serves them. */
static bool is_hostname_file(const char *real)
{
	return strcmp(real, "/proc/sys/kernel/hostname") == 0 || strcmp(real, "/etc/hostname") == 0;
}

/* Replace *fd (a file opened for reading) by a sealed memfd holding
 * text, so the guest reads what we serve and can never change it.
 * 0 or an errno. */
static int serve_text(const char *name, const char *text, int *fd)
{
	int m = sl_virt_memfd(name, text, strlen(text));
	if (m < 0)
		return EIO;
	close(*fd);
	*fd = m;
	return 0;
}

/* The sandbox's name, as the hostname files hold it. */
static int serve_hostname(const struct sl_opener *op, int *fd)
{
	char line[80];
	snprintf(line, sizeof line, "%s\n", op->hostname);
	return serve_text("hostname", line, fd);
}

/* Is fd the host's /etc/hosts (same device and inode)? */
static bool is_hosts_file(const struct sl_opener *op, int fd)
{
	struct stat st;
	return op->hosts && op->hosts_ino && fstat(fd, &st) == 0 && st.st_dev == op->hosts_dev &&
	       st.st_ino == op->hosts_ino;
}

/* A TCP socket table of procfs (/proc/PID/net/tcp, .../tcp6)? */
static bool is_proc_net_tcp(int fd, const char *real)
{
	size_t n = strlen(real);
	return strncmp(real, "/proc/", 6) == 0 &&
	       ((n > 8 && strcmp(real + n - 8, "/net/tcp") == 0) ||
	        (n > 9 && strcmp(real + n - 9, "/net/tcp6") == 0)) &&
	       sl_on_procfs(fd);
}

/* The whole of *fd (at most 64 MiB) into b: 0 or an errno. */
static int read_whole(int fd, sl_buf *b)
{
	char chunk[16384];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		if (b->len > (64u << 20) || sl_buf_append(b, chunk, (size_t)n) < 0)
			return EIO;
	return n < 0 ? errno : 0;
}

/* The table of *fd with virtual ports, served as a sealed memfd. */
static int serve_proc_net(const struct sl_opener *op, int *fd)
{
	sl_buf b = { 0 };
	int e = read_whole(*fd, &b);
	if (!e) {
		if (!b.data)
			return serve_text("tcp", "", fd);
		sl_portmap_rewrite_proc_net(op->ports, (char *)b.data);
		e = serve_text("tcp", (char *)b.data, fd);
	}
	sl_buf_free(&b);
	return e;
}

/* Is fd one of the trust bundles the CA is spliced into? */
static bool is_cabundle(const struct sl_opener *op, int fd)
{
	struct stat st;
	if (!op->nbundles || fstat(fd, &st) < 0)
		return false;
	for (size_t i = 0; i < op->nbundles; i++)
		if (st.st_dev == op->bundles[i].dev && st.st_ino == op->bundles[i].ino)
			return true;
	return false;
}

/* The bundle of *fd with the proxy's CA certificate appended. */
static int serve_cabundle(const struct sl_opener *op, int *fd)
{
	sl_buf b = { 0 };
	int e = read_whole(*fd, &b);
	if (!e && b.len && b.data[b.len - 1] != '\n')
		e = sl_buf_append(&b, "\n", 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = sl_buf_append(&b, op->ca_pem, strlen(op->ca_pem) + 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = serve_text("cabundle", (char *)b.data, fd);
	sl_buf_free(&b);
	return e;
}

/* *fdp (our fd of out->path, opened for reading) replaced by what the
 * guest is served instead, if anything: 0 or an errno. */
int sl_opener_serve(const struct sl_opener *op, const sandlock_opened_t *out, pid_t pid,
                    int *fdp)
{
	int fd = *fdp;
	if (op->hostname[0] && is_hostname_file(out->path))
		return serve_hostname(op, fdp);
	if (is_hosts_file(op, fd))
		return serve_text("hosts", op->hosts, fdp);
	if (is_cabundle(op, fd))
		return serve_cabundle(op, fdp);
	if (op->ports && is_proc_net_tcp(fd, out->path))
		return serve_proc_net(op, fdp);
	return sl_virt_serve(op->virt, out->path, pid, fdp);
}
