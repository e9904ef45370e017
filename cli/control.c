/*
 * control.c — the control socket of a named run, and the ps / inspect /
 * kill clients.
 *
 * One Unix stream socket per named run, NAME.sock in the user's control
 * directory.  Two layers keep other users out: the directory is 0700 and
 * owned by us (checked, not assumed: /tmp/sandlock-UID could have been
 * made by someone else first), and the server answers only a peer whose
 * SO_PEERCRED uid is ours.  A request is one line ("inspect" or "kill"),
 * the answer one line of JSON; "policy" is answered with the run's policy
 * as a TOML profile, many lines, ended by closing the connection.
 */
#include "control.h"
#include "profile.h"
/* The library's list of control directories (libsandlock.a, linked in):
 * its sandboxes refuse to connect into them. */
#include "ctldir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

struct cli_control {
	int lfd;
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

static int connect_path(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
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
		struct pollfd pf[2] = { { c->lfd, POLLIN, 0 }, { c->stop[0], POLLIN, 0 } };
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			break;
		int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve_client(c, fd);
		close(fd);
	}
	return NULL;
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
	c->lfd = c->stop[0] = c->stop[1] = -1;
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
	close(c->stop[0]);
	close(c->stop[1]);
	free(c->policy);
	free(c);
}

/* ---------------- clients ---------------- */

/* Send req to the named run; its one-line answer in buf.  0 or -1. */
static int request(const char *path, const char *req, char *buf, size_t len)
{
	int fd = connect_server(path);
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

static int named_path(const char *name, char *path, size_t len)
{
	if (!valid_name(name)) {
		fprintf(stderr, "sandlock: invalid sandbox name '%s'\n", name);
		return -1;
	}
	return sock_path(name, path, len, false);
}

static int ask_named(const char *name, const char *req, char *buf, size_t len)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	if (named_path(name, path, sizeof path) < 0 || request(path, req, buf, len) < 0) {
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
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int fd = named_path(name, path, sizeof path) < 0 ? -1 : connect_server(path);
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

int cli_cmd_ps(int argc, char **argv)
{
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "Usage: sandlock ps [--json]\n");
		return 125;
	}
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int n = 0;
	if (json)
		fputs("[", stdout);
	else
		printf("%-20s %8s %12s  %s\n", "NAME", "PID", "STARTED", "COMMAND");
	DIR *d = control_dir(dir, sizeof dir, false) == 0 ? opendir(dir) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 5, ".sock") != 0)
			continue;
		char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 256], buf[REPLY_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (request(path, "inspect\n", buf, sizeof buf) < 0 || strstr(buf, "\"error\""))
			continue; /* stale: its run died without removing it */
		if (json) {
			printf("%s%s", n ? "," : "", buf);
		} else {
			char name[NAME_MAX_LEN + 1] = "";
			sscanf(json_raw(buf, "name"), "\"%64[^\"]\"", name);
			const char *cmd = json_raw(buf, "command");
			printf("%-20s %8lld %12lld  %.*s\n", name, json_num(buf, "pid"),
			       json_num(buf, "started"), (int)(strlen(cmd) ? strlen(cmd) - 1 : 0), cmd);
		}
		n++;
	}
	if (d)
		closedir(d);
	if (json)
		fputs("]\n", stdout);
	return 0;
}
