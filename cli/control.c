/*
 * control.c — the control socket of a named run, and the ps / inspect /
 * kill clients.
 *
 * One Unix stream socket per named run, NAME.sock in the user's control
 * directory.  Two layers keep other users out: the directory is 0700 and
 * owned by us (checked, not assumed: /tmp/sandlock-UID could have been
 * made by someone else first), and the server answers only a peer whose
 * SO_PEERCRED uid is ours.  The same server also listens on an abstract
 * name derived from the directory and the run's name (abstract_name): a
 * guest granted -w over the directory can delete the socket file, not an
 * abstract name, so clients fall back to it and a run stays reachable
 * (a guest cannot connect to it either: its supervisor refuses, as
 * Landlock's scope does).  A request is one line ("inspect" or "kill"),
 * the answer one line of JSON; "policy" is answered with the run's policy
 * as a TOML profile, many lines, ended by closing the connection.
 */
#include "control.h"
#include "parse.h"
#include "profile.h"
#include "signals.h"
/* The library's list of control directories (libsandlock.a, linked in):
 * its sandboxes refuse to connect into them. */
#include "run/ctldir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN 64
#define REPLY_MAX 8192

#define ABSTRACT_TRIES 8 /* names NAME, NAME/1 ... if someone took the first */

struct cli_control {
	int lfd;
	int afd; /* the abstract listener, or -1 */
	int stop[2];
	bool serving;
	pthread_t thread;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char name[NAME_MAX_LEN + 1];
	sandlock_handle_t *h;
	char **cmd;
	int ncmd;
	char *policy; /* TOML profile text, or NULL */
	long long started;
};

/* Letters, digits, '.', '_', '-'; not starting with '.'; at most 64. */
static bool valid_name(const char *n)
{
	size_t len = strlen(n);
	if (len == 0 || len > NAME_MAX_LEN || n[0] == '.')
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '.' || *p == '_' || *p == '-'))
			return false;
	return true;
}

/* Is path a directory of ours that nobody else may enter? */
static bool private_dir(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
	       (st.st_mode & 077) == 0;
}

/* Someone else's (or not a directory): a candidate to pass over, since
 * any user may make /tmp/sandlock-UID first; ours with a loose mode is
 * our own mistake, and refused below. */
static bool foreign(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 && (!S_ISDIR(st.st_mode) || st.st_uid != getuid());
}

/*
 * The control directory (made if create and missing); 0, or -1 after
 * printing why.  The candidates of ctldir.h in order (the library knows
 * them: no sandbox may connect into one): $XDG_RUNTIME_DIR/sandlock,
 * /run/user/UID/sandlock when /run/user/UID is ours, /tmp/sandlock-UID,
 * ~/.cache/sandlock-UID.  One that is missing (and cannot be made) or
 * belongs to someone else is passed over, by the clients too.
 */
static int control_dir(char *out, size_t len, bool create)
{
	char c[SL_CTLDIR_MAX][SL_CTLDIR_LEN];
	int n = sl_ctldir_candidates(c);
	for (int i = 0; i < n; i++) {
		char parent[SL_CTLDIR_LEN];
		memcpy(parent, c[i], sizeof parent);
		*strrchr(parent, '/') = 0;
		struct stat st;
		if (strncmp(c[i], "/run/user/", 10) == 0 &&
		    (stat(parent, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()))
			continue;
		if (foreign(c[i])) {
			if (create)
				fprintf(stderr, "sandlock: warning: %s belongs to another user; not using "
				                "it\n", c[i]);
			continue;
		}
		if (create && mkdir(c[i], 0700) < 0 && errno != EEXIST)
			continue;
		if (access(c[i], F_OK) < 0)
			continue; /* nothing was ever named here */
		if (strlen(c[i]) >= len)
			continue;
		memcpy(out, c[i], strlen(c[i]) + 1);
		if (!private_dir(out)) {
			fprintf(stderr, "sandlock: %s is not a directory private to this user; "
			                "refusing to use it (chmod 700 it)\n", out);
			return -1;
		}
		return 0;
	}
	if (create)
		fprintf(stderr, "sandlock: no usable control directory (set XDG_RUNTIME_DIR to a "
		                "directory of yours)\n");
	return -1;
}

static int sock_path(const char *name, char *out, size_t len, bool create)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (control_dir(dir, sizeof dir, create) < 0)
		return -1;
	if ((size_t)snprintf(out, len, "%s/%s.sock", dir, name) >= len) {
		fprintf(stderr, "sandlock: control socket path too long\n");
		return -1;
	}
	return 0;
}

/* The abstract name (without its leading NUL) of try i of a run named
 * name whose control directory is dir: per user and directory (two
 * sessions of one user may both have a run "x"), the try number last. */
static void abstract_name(const char *dir, const char *name, int i, char *out, size_t len)
{
	uint32_t h = 2166136261u; /* FNV-1a of the directory */
	for (const unsigned char *p = (const unsigned char *)dir; *p; p++)
		h = (h ^ *p) * 16777619u;
	int n = snprintf(out, len, "sandlock-%u-%08x/%s", (unsigned)getuid(), h, name);
	if (i && n > 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "/%d", i);
}

/* A unix address: a path, or (abstract) a name given without its NUL. */
static socklen_t unix_addr(struct sockaddr_un *a, const char *name, bool abstract)
{
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	size_t n = strnlen(name, sizeof a->sun_path - 1 - abstract); /* callers keep it short */
	memcpy(a->sun_path + abstract, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + abstract + n + !abstract);
}

static int connect_addr(const char *name, bool abstract)
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

static int connect_path(const char *path)
{
	return connect_addr(path, false);
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
 * Is the other end of fd a process of ours no more confined than we are?
 * Both ends ask: a sandboxed process must neither query or kill a run
 * (the server refuses it) nor stand in for a run's server after
 * replacing its socket (the client refuses it: no forged answers, no
 * "kill" that succeeded while the run goes on).  A sandbox's own
 * connects are also refused by its supervisor (ctldir.h); those are made
 * by the supervisor, whose credentials this cannot tell from ours.
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

/* The server behind fd, connected to path: a trusted_peer that itself
 * holds the socket listening there.  The second half matters because a
 * listen a sandbox's supervisor performed for a guest (netdest) carries
 * the supervisor's credentials, which trusted_peer cannot tell from a
 * run's; only the guest holds that socket (ctldir.h). */
static bool trusted_server(int fd, const char *path, pid_t *pid)
{
	return trusted_peer(fd, pid) && sl_ctldir_served_by(path, *pid);
}

/* The same for a connection to the abstract name aname. */
static bool trusted_abstract(int fd, const char *aname, pid_t *pid)
{
	return trusted_peer(fd, pid) && sl_ctldir_abstract_served_by(aname, *pid);
}

/* A connection to path whose server is trusted_server; -1 (after saying
 * why, for a server that is not) otherwise. */
static int connect_server(const char *path)
{
	int fd = connect_path(path);
	pid_t pid;
	if (fd >= 0 && !trusted_server(fd, path, &pid)) {
		fprintf(stderr, "sandlock: %s is not served by a sandlock run of yours (its server, "
		                "pid %d, is another user's, sandboxed, or does not hold it); not "
		                "trusting it\n", path, (int)pid);
		close(fd);
		return -1;
	}
	return fd;
}

/* ---------------- server ---------------- */

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

static char *info_json(const struct cli_control *c)
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
	for (int i = 0; i < c->ncmd; i++) {
		if (i)
			fputc(',', f);
		json_str(f, c->cmd[i]);
	}
	fputs("]}\n", f);
	fclose(f);
	return buf;
}

static void reply(int fd, const char *s)
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

static void serve_client(struct cli_control *c, int fd)
{
	pid_t pid;
	if (!trusted_peer(fd, &pid)) {
		reply(fd, "{\"error\":\"permission denied\"}\n");
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
		reply(fd, j ? j : "{\"error\":\"out of memory\"}\n");
		free(j);
	} else if (strcmp(line, "policy") == 0) {
		reply(fd, c->policy ? c->policy : "{\"error\":\"policy not available\"}\n");
	} else if (strcmp(line, "stop") == 0) {
		/* As if SIGTERM were sent to this sandlock: forwarded to the
		 * command, with this run's --kill-after (signals.c). */
		reply(fd, cli_signals_request(SIGTERM) == 0 ? "{\"ok\":true}\n"
		                                             : "{\"ok\":false,\"error\":\"not running\"}\n");
	} else if (strcmp(line, "kill") == 0) {
		reply(fd, sandlock_handle_kill(c->h) == 0 ? "{\"ok\":true}\n"
		                                          : "{\"ok\":false,\"error\":\"not running\"}\n");
	} else {
		reply(fd, "{\"error\":\"unknown request\"}\n");
	}
}

static void *serve_main(void *arg)
{
	struct cli_control *c = arg;
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
static void listen_abstract(struct cli_control *c)
{
	char dir[sizeof c->path], aname[sizeof c->path];
	snprintf(dir, sizeof dir, "%s", c->path);
	*strrchr(dir, '/') = 0;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	for (int i = 0; fd >= 0 && i < ABSTRACT_TRIES; i++) {
		struct sockaddr_un a;
		abstract_name(dir, c->name, i, aname, sizeof aname);
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
	fprintf(stderr, "sandlock: warning: '%s' is reachable by its socket file only\n", c->name);
}

struct cli_control *cli_control_open(const char *name)
{
	if (!valid_name(name)) {
		fprintf(stderr, "sandlock: invalid --name '%s': use 1-64 letters, digits, '.', "
		                "'_' or '-', not starting with '.'\n", name);
		return NULL;
	}
	struct cli_control *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->lfd = c->afd = c->stop[0] = c->stop[1] = -1;
	snprintf(c->name, sizeof c->name, "%s", name);
	if (sock_path(name, c->path, sizeof c->path, true) < 0)
		goto fail;
	int probe = connect_path(c->path);
	pid_t holder;
	bool ours = probe >= 0 && trusted_server(probe, c->path, &holder);
	if (probe >= 0)
		close(probe);
	if (ours) {
		fprintf(stderr, "sandlock: a sandbox named '%s' is already running\n", name);
		goto fail;
	}
	unlink(c->path); /* a stale socket of a run that died, or a sandboxed squatter's */
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", c->path);
	c->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->lfd < 0 || bind(c->lfd, (struct sockaddr *)&a, sizeof a) < 0 ||
	    chmod(c->path, 0600) < 0 || listen(c->lfd, 8) < 0 || pipe2(c->stop, O_CLOEXEC) < 0) {
		fprintf(stderr, "sandlock: control socket %s: %s\n", c->path, strerror(errno));
		goto fail;
	}
	listen_abstract(c);
	return c;
fail:
	if (c->lfd >= 0) {
		close(c->lfd);
		unlink(c->path);
	}
	free(c);
	return NULL;
}

int cli_control_serve(struct cli_control *c, sandlock_handle_t *h, char **cmd, int ncmd,
                      const char *policy)
{
	c->h = h;
	c->policy = policy ? strdup(policy) : NULL;
	c->cmd = cmd;
	c->ncmd = ncmd;
	c->started = (long long)time(NULL);
	if (pthread_create(&c->thread, NULL, serve_main, c) != 0)
		return -1;
	c->serving = true;
	return 0;
}

void cli_control_close(struct cli_control *c)
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
	free(c->policy);
	free(c);
}

/* ---------------- clients ---------------- */

#define SUN_LEN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/*
 * A connection to the run named name whose server is trusted: by its
 * socket file, else (deleted, or someone else's in its place) by its
 * abstract names.  -1 when none answers.
 */
static int connect_named(const char *name)
{
	char dir[SUN_LEN_MAX], path[SUN_LEN_MAX + NAME_MAX_LEN + 8], aname[SUN_LEN_MAX];
	if (!valid_name(name)) {
		fprintf(stderr, "sandlock: invalid sandbox name '%s'\n", name);
		return -1;
	}
	if (control_dir(dir, sizeof dir, false) < 0 ||
	    (size_t)snprintf(path, sizeof path, "%s/%s.sock", dir, name) >= SUN_LEN_MAX)
		return -1;
	int fd = access(path, F_OK) == 0 ? connect_server(path) : -1;
	for (int i = 0; fd < 0 && i < ABSTRACT_TRIES; i++) {
		pid_t pid;
		abstract_name(dir, name, i, aname, sizeof aname);
		fd = connect_addr(aname, true);
		if (fd >= 0 && !trusted_abstract(fd, aname, &pid)) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* Send req to the named run; its one-line answer in buf.  0 or -1. */
static int request(const char *name, const char *req, char *buf, size_t len)
{
	int fd = connect_named(name);
	if (fd < 0)
		return -1;
	reply(fd, req);
	size_t got = 0;
	while (got + 1 < len) {
		ssize_t n = recv(fd, buf + got, len - 1 - got, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
		if (memchr(buf, '\n', got))
			break;
	}
	close(fd);
	buf[got] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return got ? 0 : -1;
}

/* The value after "key": in a flat JSON line (numbers, true/false). */
static long long json_num(const char *j, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(j, pat);
	return p ? atoll(p + strlen(pat)) : -1;
}

static const char *json_raw(const char *j, const char *key)
{
	char pat[32];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(j, pat);
	return p ? p + strlen(pat) : "";
}

static int ask_named(const char *name, const char *req, char *buf, size_t len)
{
	if (request(name, req, buf, len) < 0) {
		fprintf(stderr, "sandlock: no running sandbox named '%s'\n", name);
		return -1;
	}
	if (strstr(buf, "\"error\"")) {
		fprintf(stderr, "sandlock: %s: %s\n", name, buf);
		return -1;
	}
	return 0;
}

/* Send req to the named run; its whole answer (until it closes) on
 * stdout, unless it is an error line.  0, or -1 after saying why. */
static int request_all(const char *name, const char *req, char **text)
{
	int fd = connect_named(name);
	if (fd < 0) {
		fprintf(stderr, "sandlock: no running sandbox named '%s'\n", name);
		return -1;
	}
	reply(fd, req);
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	char buf[4096];
	ssize_t n;
	while (f && (n = recv(fd, buf, sizeof buf, 0)) > 0)
		fwrite(buf, 1, (size_t)n, f);
	close(fd);
	if (!f || fclose(f) != 0) {
		fprintf(stderr, "sandlock: out of memory\n");
		return -1;
	}
	if (len == 0 || strncmp(*text, "{\"error\"", 9) == 0) {
		(*text)[strcspn(*text, "\n")] = 0;
		fprintf(stderr, "sandlock: %s: %s\n", name, len ? *text : "no answer");
		free(*text);
		return -1;
	}
	return 0;
}

static void print_text(const char *j)
{
	const char *cmd = json_raw(j, "command");
	char name[NAME_MAX_LEN + 1] = "";
	sscanf(json_raw(j, "name"), "\"%64[^\"]\"", name);
	printf("name:           %s\n", name);
	printf("pid:            %lld\n", json_num(j, "pid"));
	printf("init pid:       %lld\n", json_num(j, "init_pid"));
	printf("supervisor pid: %lld\n", json_num(j, "supervisor_pid"));
	printf("started:        %lld\n", json_num(j, "started"));
	printf("running:        %s\n", strncmp(json_raw(j, "running"), "true", 4) ? "no" : "yes");
	printf("command:        %.*s\n", (int)(strlen(cmd) ? strlen(cmd) - 1 : 0), cmd);
}

/* --toml: the run's policy as a profile; a warning names what it cannot hold. */
static int print_policy(const char *name)
{
	char *text = NULL;
	if (request_all(name, "policy\n", &text) < 0)
		return 1;
	fputs(text, stdout);
	if (strstr(text, CLI_PROFILE_LOST))
		fprintf(stderr, "sandlock: warning: '%s' was started with options a profile cannot "
		                "hold (listed as comments): a run from this profile is not the "
		                "same sandbox\n", name);
	free(text);
	return 0;
}

int cli_cmd_inspect(int argc, char **argv)
{
	static const char usage[] = "Usage: sandlock inspect NAME [--json|--toml]\n";
	bool json = false, toml = false;
	const char *name = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--toml") == 0)
			toml = true;
		else if (!name && argv[i][0] != '-')
			name = argv[i];
		else {
			fprintf(stderr, "sandlock: inspect: unexpected argument '%s'\n%s", argv[i],
			        usage);
			return 125;
		}
	}
	if (!name || (json && toml)) {
		fputs(usage, stderr);
		return 125;
	}
	if (toml)
		return print_policy(name);
	char buf[REPLY_MAX];
	if (ask_named(name, "inspect\n", buf, sizeof buf) < 0)
		return 1;
	if (json)
		printf("%s\n", buf);
	else
		print_text(buf);
	return 0;
}

int cli_cmd_kill(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "Usage: sandlock kill NAME\n");
		return 125;
	}
	char buf[256];
	if (ask_named(argv[1], "kill\n", buf, sizeof buf) < 0)
		return 1;
	if (!strstr(buf, "\"ok\":true")) {
		fprintf(stderr, "sandlock: %s is not running any more\n", argv[1]);
		return 1;
	}
	return 0;
}

/* Poll until the run named name no longer answers; false after ms. */
static bool wait_gone(const char *name, uint64_t ms)
{
	for (uint64_t waited = 0;; waited += 50) {
		int fd = connect_named(name);
		if (fd < 0)
			return true;
		close(fd);
		if (waited >= ms)
			return false;
		usleep(50 * 1000);
	}
}

/*
 * sandlock stop [-t SECS] NAME: SIGTERM to the command (forwarded by the
 * run, so its cleanup runs), then, if it still runs SECS later (default
 * 10, as docker stop), end the whole sandbox as `kill` does.
 */
int cli_cmd_stop(int argc, char **argv)
{
	uint64_t grace_ms = 10000;
	const char *why = NULL;
	int i = 1;
	if (argc == 4 && strcmp(argv[1], "-t") == 0) {
		if (cli_parse_seconds(argv[2], &grace_ms, &why)) {
			fprintf(stderr, "sandlock: stop %s '%s': %s\n", argv[1], argv[2], why);
			return 125;
		}
		i = 3;
	}
	if (argc != i + 1 || argv[i][0] == '-') {
		fprintf(stderr, "Usage: sandlock stop [-t SECS] NAME\n");
		return 125;
	}
	const char *name = argv[i];
	char buf[256];
	if (ask_named(name, "stop\n", buf, sizeof buf) < 0)
		return 1;
	if (!strstr(buf, "\"ok\":true")) {
		fprintf(stderr, "sandlock: %s is not running any more\n", name);
		return 1;
	}
	if (wait_gone(name, grace_ms))
		return 0;
	if (request(name, "kill\n", buf, sizeof buf) == 0 && !wait_gone(name, 10000)) {
		fprintf(stderr, "sandlock: %s did not end after SIGTERM and kill\n", name);
		return 1;
	}
	return 0;
}

/* Unix seconds as local "YYYY-MM-DD HH:MM:SS" for people (JSON keeps the
 * number). */
static void local_time(long long t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (t < 0 || !localtime_r(&tt, &tm) || !strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
		snprintf(out, len, "%lld", t);
}

/* Add name to the list of n names (at most max) unless it is there. */
static void add_name(char (*v)[NAME_MAX_LEN + 1], int *n, int max, const char *name, size_t len)
{
	if (len == 0 || len > NAME_MAX_LEN || *n >= max)
		return;
	for (int i = 0; i < *n; i++)
		if (strlen(v[i]) == len && memcmp(v[i], name, len) == 0)
			return;
	memcpy(v[*n], name, len);
	v[(*n)++][len] = 0;
}

/* The names of the runs of control directory dir: its socket files, and
 * its abstract names (/proc/net/unix: a file may have been deleted). */
static int run_names(const char *dir, char (*v)[NAME_MAX_LEN + 1], int max)
{
	int n = 0;
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len >= 6 && strcmp(e->d_name + len - 5, ".sock") == 0)
			add_name(v, &n, max, e->d_name, len - 5);
	}
	if (d)
		closedir(d);
	char prefix[SUN_LEN_MAX + 1] = "@", line[512];
	abstract_name(dir, "", 0, prefix + 1, sizeof prefix - 1);
	FILE *f = fopen("/proc/net/unix", "re");
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		char *at = strrchr(line, ' ');
		if (at && strncmp(at + 1, prefix, strlen(prefix)) == 0) {
			const char *name = at + 1 + strlen(prefix);
			add_name(v, &n, max, name, strcspn(name, "/"));
		}
	}
	if (f)
		fclose(f);
	return n;
}

int cli_cmd_ps(int argc, char **argv)
{
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "Usage: sandlock ps [--json]\n");
		return 125;
	}
	char dir[SUN_LEN_MAX];
	static char names[256][NAME_MAX_LEN + 1];
	int n = 0, k = control_dir(dir, sizeof dir, false) == 0 ? run_names(dir, names, 256) : 0;
	if (json)
		fputs("[", stdout);
	else
		printf("%-20s %8s %-19s  %s\n", "NAME", "PID", "STARTED", "COMMAND");
	for (int i = 0; i < k; i++) {
		char buf[REPLY_MAX];
		if (request(names[i], "inspect\n", buf, sizeof buf) < 0 || strstr(buf, "\"error\""))
			continue; /* stale: its run died without removing it */
		if (json) {
			printf("%s%s", n ? "," : "", buf);
		} else {
			char name[NAME_MAX_LEN + 1] = "";
			sscanf(json_raw(buf, "name"), "\"%64[^\"]\"", name);
			const char *cmd = json_raw(buf, "command");
			char when[32];
			local_time(json_num(buf, "started"), when, sizeof when);
			printf("%-20s %8lld %-19s  %.*s\n", name, json_num(buf, "pid"), when,
			       (int)(strlen(cmd) ? strlen(cmd) - 1 : 0), cmd);
		}
		n++;
	}
	if (json)
		fputs("]\n", stdout);
	return 0;
}
