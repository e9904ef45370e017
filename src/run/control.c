/*
 * control.c — every run's control socket (see control.h).
 *
 * Two layers keep other users out: the directory is 0700 and owned by us
 * (checked, not assumed: /tmp/sandlock-UID could have been made by
 * someone else first), and the server answers only a peer whose
 * SO_PEERCRED uid is ours and which is no more confined than we are.
 * The same server also listens on an abstract name derived from the
 * directory and the run's name: a guest granted -w over the directory can
 * delete the socket file, not an abstract name, so clients fall back to
 * it and a run stays reachable (a guest cannot connect to it either: its
 * supervisor refuses, as Landlock's scope does).
 */
#include "run/control.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "run/ctldir.h"
#include "util.h"

#define SUN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

bool sl_control_valid_name(const char *n)
{
	size_t len = n ? strlen(n) : 0;
	if (len == 0 || len > SL_CONTROL_NAME_MAX || n[0] == '.')
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* ---------------- the directory ---------------- */

/* Is path a directory of ours that nobody else may enter? */
static bool private_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	       (st.st_mode & 077) == 0;
}

/* Someone else's (or not a directory): a candidate to pass over, since
 * any user may make /tmp/sandlock-UID first; ours with a loose mode is
 * our own mistake, and refused. */
static bool foreign(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != getuid());
}

/* /run/user/UID/sandlock only when /run/user/UID is ours. */
static bool parent_usable(const char *cand)
{
	if (strncmp(cand, "/run/user/", 10) != 0)
		return true;
	char parent[SL_CTLDIR_LEN];
	memcpy(parent, cand, sizeof parent);
	*strrchr(parent, '/') = 0;
	struct stat st;
	return stat(parent, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid();
}

int sl_control_dir(char *out, size_t len, bool create, FILE *say, const char **why)
{
	char c[SL_CTLDIR_MAX][SL_CTLDIR_LEN];
	int n = sl_ctldir_candidates(c);
	for (int i = 0; i < n; i++) {
		if (!parent_usable(c[i]))
			continue;
		if (foreign(c[i])) {
			if (create && say)
				fprintf(say, "sandlock: warning: %s belongs to another user; not using "
				             "it\n", c[i]);
			continue;
		}
		if (create && mkdir(c[i], 0700) < 0 && errno != EEXIST)
			continue;
		if (access(c[i], F_OK) < 0 || strlen(c[i]) >= len)
			continue; /* nothing was ever named here */
		memcpy(out, c[i], strlen(c[i]) + 1);
		if (!private_dir(out)) {
			*why = "is not a directory private to this user; refusing to use it "
			       "(chmod 700 it)";
			return -1;
		}
		return 0;
	}
	out[0] = 0;
	*why = "no usable control directory (set XDG_RUNTIME_DIR to a directory of yours)";
	return -1;
}

void sl_control_abstract_name(const char *dir, const char *name, int i, char *out, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a of the directory */
	for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
		h = (h ^ *p) * 16777619u;
	int n = snprintf(out, len, "sandlock-%u-%08x/%s", (unsigned)getuid(), h, name);
	if (i && n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "/%d", i);
}

/* ---------------- sockets and peers ---------------- */

/* A unix address: a path, or (abstract) a name given without its NUL. */
static socklen_t unix_addr(struct sockaddr_un *a, const char *name, bool abstract)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	size_t n = strnlen(name, sizeof a->sun_path - 1 - abstract); /* callers keep it short */
	memcpy(a->sun_path + abstract, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n + !abstract);
}

int sl_control_connect(const char *name, bool abstract)
{
	struct sockaddr_un a;
	socklen_t len = unix_addr(&a, name, abstract);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The seccomp filters on pid (how deeply it is sandboxed; every sandbox
 * adds one), -1 when its status cannot be read. */
static int seccomp_depth(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	int mode = -1, filters = -1;
	while (f && fgets(line, sizeof line, f)) {
		sscanf(line, "Seccomp: %d", &mode);
		sscanf(line, "Seccomp_filters: %d", &filters);
	}
	if (f)
		fclose(f);
	return filters >= 0 ? filters : mode < 0 ? -1 : mode != 0; /* before 5.9: a mode */
}

/*
 * A sandboxed process must neither query or kill a run (the server
 * refuses it) nor stand in for a run's server after replacing its socket
 * (the client refuses it: no forged answers, no "kill" that succeeded
 * while the run goes on).  A sandbox's own connects are also refused by
 * its supervisor (ctldir.h); those are made by the supervisor, whose
 * credentials this cannot tell from ours.
 */
static bool trusted_peer(int fd, pid_t *pid)
{
	struct ucred cred;
	socklen_t clen = sizeof cred;
	*pid = 0;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0 || cred.uid != getuid() ||
	    cred.pid <= 0)
		return false;
	*pid = cred.pid;
	int mine = seccomp_depth(getpid()), theirs = seccomp_depth(cred.pid);
	return mine >= 0 && theirs >= 0 && theirs <= mine;
}

bool sl_control_trusted_server(int fd, const char *path, pid_t *pid)
{
	return trusted_peer(fd, pid) && sl_ctldir_served_by(path, *pid);
}

bool sl_control_trusted_abstract(int fd, const char *aname, pid_t *pid)
{
	return trusted_peer(fd, pid) && sl_ctldir_abstract_served_by(aname, *pid);
}

void sl_control_send(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* ---------------- the server ---------------- */

struct sl_control {
	int lfd;
	int afd; /* the abstract listener, or -1 */
	int stop[2];
	bool serving;
	pthread_t thread;
	char path[SUN_MAX];
	char name[SL_CONTROL_NAME_MAX + 16];
	sandlock_handle_t *h;
	int (*kill)(sandlock_handle_t *);
	char **cmd;
	size_t ncmd;
	char *policy; /* TOML profile text, or NULL */
	int (*stop_fn)(void *);
	void *stop_ud;
	long long started;
};

/* s as a JSON string into f. */
static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static char *info_json(const struct sl_control *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	fputs("{\"name\":", f);
	json_str(f, c->name);
	fprintf(f, ",\"pid\":%d,\"init_pid\":%d,\"supervisor_pid\":%d,\"uid\":%u,"
	           "\"started\":%lld,\"running\":%s,\"command\":[",
	        sandlock_handle_pid(c->h), sandlock_handle_init_pid(c->h), (int)getpid(),
	        (unsigned)getuid(), c->started, sandlock_handle_is_running(c->h) ? "true" : "false");
	for (size_t i = 0; i < c->ncmd; i++) {
		if (i)
			fputc(',', f);
		json_str(f, c->cmd[i]);
	}
	fputs("]}\n", f);
	fclose(f);
	return buf;
}

/* SIGTERM to the command, forwarded by init (sandlock.h), while init is
 * ours and unreaped: its pid cannot have been reused. */
static int stop_by_init(sandlock_handle_t *h)
{
	if (!sandlock_handle_is_running(h))
		return -1;
	pid_t init = sandlock_handle_init_pid(h);
	return init > 0 ? sigqueue(init, SANDLOCK_SIG_FORWARD, (union sigval){ .sival_int = SIGTERM })
	                : -1;
}

static const char *ok_or(int rc)
{
	return rc == 0 ? "{\"ok\":true}\n" : "{\"ok\":false,\"error\":\"not running\"}\n";
}

static void serve_client(struct sl_control *c, int fd)
{
	pid_t pid;
	if (!trusted_peer(fd, &pid)) {
		sl_control_send(fd, "{\"error\":\"permission denied\"}\n");
		return;
	}
	struct timeval tv = { 1, 0 }; /* a client that sends nothing cannot hold us */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	char line[64];
	ssize_t n = recv(fd, line, sizeof line - 1, 0);
	if (n <= 0)
		return;
	line[n] = 0;
	line[strcspn(line, "\r\n")] = 0;
	if (strcmp(line, "inspect") == 0) {
		char *j = info_json(c);
		sl_control_send(fd, j ? j : "{\"error\":\"out of memory\"}\n");
		free(j);
	} else if (strcmp(line, "policy") == 0) {
		sl_control_send(fd, c->policy ? c->policy : "{\"error\":\"policy not available\"}\n");
	} else if (strcmp(line, "stop") == 0) {
		sl_control_send(fd, ok_or(c->stop_fn ? c->stop_fn(c->stop_ud) : stop_by_init(c->h)));
	} else if (strcmp(line, "kill") == 0) {
		sl_control_send(fd, ok_or(c->kill(c->h)));
	} else {
		sl_control_send(fd, "{\"error\":\"unknown request\"}\n");
	}
}

static void *serve_main(void *arg)
{
	struct sl_control *c = arg;
	for (;;) {
		struct pollfd pf[3] = { { c->stop[0], POLLIN, 0 },
			                    { c->lfd, POLLIN, 0 },
			                    { c->afd, POLLIN, 0 } }; /* -1: ignored by poll */
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[0].revents)
			break;
		for (int i = 1; i < 3; i++) {
			int fd = pf[i].revents ? accept4(pf[i].fd, NULL, NULL, SOCK_CLOEXEC) : -1;
			if (fd < 0)
				continue;
			serve_client(c, fd);
			close(fd);
		}
	}
	return NULL;
}

/* Listen on the first free abstract name of the run too (a name someone
 * else holds, another user's or a guest's, is passed over: clients check
 * whoever answers).  Without one the run is reachable by its file only. */
static void listen_abstract(struct sl_control *c)
{
	char dir[sizeof c->path], aname[SUN_MAX];
	snprintf(dir, sizeof dir, "%s", c->path);
	*strrchr(dir, '/') = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	for (int i = 0; fd >= 0 && i < SL_CONTROL_ABSTRACT_TRIES; i++) {
		struct sockaddr_un a;
		sl_control_abstract_name(dir, c->name, i, aname, sizeof aname);
		socklen_t len = unix_addr(&a, aname, true);
		if (bind(fd, (struct sockaddr *)&a, len) == 0 && listen(fd, 8) == 0) {
			c->afd = fd;
			return;
		}
		if (errno != EADDRINUSE)
			break;
	}
	if (fd >= 0)
		close(fd);
}

/* Is the socket file at path served by a live run of ours? */
static bool in_use(const char *path)
{
	int probe = sl_control_connect(path, false);
	pid_t holder;
	bool ours = probe >= 0 && sl_control_trusted_server(probe, path, &holder);
	if (probe >= 0)
		close(probe);
	return ours;
}

/* Bind and listen at path (a stale socket of a run that died, or a
 * sandboxed squatter's, is replaced).  0 or -1. */
static int listen_path(struct sl_control *c)
{
	unlink(c->path);
	struct sockaddr_un a;
	socklen_t len = unix_addr(&a, c->path, false);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&a, len) < 0 ||
	    chmod(c->path, 0600) < 0 || listen(c->lfd, 8) < 0 || pipe2(c->stop, O_CLOEXEC) < 0) {
		if (c->lfd >= 0) {
			close(c->lfd);
			c->lfd = -1;
			unlink(c->path);
		}
		return -1;
	}
	return 0;
}

/* The name and socket path of the run into c; false when the name is
 * taken (strict) or nothing fits. */
static bool place(struct sl_control *c, const char *dir, const char *name, pid_t init,
                  bool strict, char **why)
{
	bool own = name && sl_control_valid_name(name);
	if (own)
		snprintf(c->name, sizeof c->name, "%s", name);
	else
		snprintf(c->name, sizeof c->name, "sandbox-%d", (int)init);
	if ((size_t)snprintf(c->path, sizeof c->path, "%s/%s.sock", dir, c->name) >= sizeof c->path)
		return false;
	if (!in_use(c->path))
		return true;
	if (strict) {
		*why = sl_asprintf("a sandbox named '%s' is already running", c->name);
		return false;
	}
	/* Another run of the library took this name first: list this one
	 * too, under its name and init's pid. */
	snprintf(c->name, sizeof c->name, "%s.%d", own ? name : "sandbox", (int)init);
	return (size_t)snprintf(c->path, sizeof c->path, "%s/%s.sock", dir, c->name) <
	       sizeof c->path;
}

struct sl_control *sl_control_open(const char *name, pid_t init, bool strict, char **why)
{
	*why = NULL;
	if (strict && !sl_control_valid_name(name)) {
		*why = sl_asprintf("invalid name '%s': use 1-64 letters, digits, '.', '_' or '-', "
		                   "not starting with '.'", name ? name : "");
		return NULL;
	}
	char dir[SUN_MAX];
	const char *dwhy = NULL;
	if (sl_control_dir(dir, sizeof dir, true, NULL, &dwhy) < 0) {
		if (strict)
			*why = sl_asprintf("%s%s%s", dir, dir[0] ? " " : "", dwhy);
		return NULL;
	}
	struct sl_control *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->lfd = c->afd = c->stop[0] = c->stop[1] = -1;
	if (!place(c, dir, name, init, strict, why) || listen_path(c) < 0) {
		if (strict && !*why)
			*why = sl_asprintf("control socket %s: %s", c->path, strerror(errno));
		free(c);
		return NULL;
	}
	listen_abstract(c);
	sl_control_sweep(dir, false); /* what runs killed before us left */
	return c;
}

int sl_control_serve(struct sl_control *c, sandlock_handle_t *h, int (*kill)(sandlock_handle_t *),
                     const char *const *argv, size_t argc, const struct sl_control_opts *o)
{
	c->h = h;
	c->kill = kill;
	c->policy = o && o->policy ? strdup(o->policy) : NULL;
	c->stop_fn = o ? o->stop : NULL;
	c->stop_ud = o ? o->stop_ud : NULL;
	c->cmd = calloc(argc + 1, sizeof *c->cmd);
	for (size_t i = 0; c->cmd && i < argc; i++)
		if ((c->cmd[c->ncmd] = strdup(argv[i])) != NULL)
			c->ncmd++;
	c->started = (long long)time(NULL);
	/* The caller's signal handlers must not run on our thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&c->thread, NULL, serve_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -1;
	c->serving = true;
	return 0;
}

void sl_control_close(struct sl_control *c)
{
	if (!c)
		return;
	if (c->serving) {
		(void)!write(c->stop[1], "x", 1);
		pthread_join(c->thread, NULL);
	}
	unlink(c->path);
	close(c->lfd);
	if (c->afd >= 0)
		close(c->afd);
	close(c->stop[0]);
	close(c->stop[1]);
	for (size_t i = 0; i < c->ncmd; i++)
		free(c->cmd[i]);
	free(c->cmd);
	free(c->policy);
	free(c);
}

void sl_control_configure(sandlock_sandbox_t *sb, const struct sl_control_opts *o)
{
	sb->control = o;
}
