/*
 * control.c — the ps / inspect / kill / stop clients of the control
 * sockets every run serves (the library's run/control.c: a run started
 * by this CLI, by Python or by a C program alike).
 */
#include "control.h"
#include "parse.h"
#include "profile.h"
/* The library's control sockets (libsandlock.a, linked in). */
#include "run/control.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define NAME_MAX_LEN (SL_CONTROL_NAME_MAX + 15) /* a library run's NAME.PID */
#define REPLY_MAX 8192

/* ---------------- clients ---------------- */

#define SUN_LEN_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

static const char usage_ps[] =
	"Usage: sandlock ps [--json]\n"
	"\n"
	"List this user's running sandboxes: those started with 'sandlock run --name\n"
	"NAME', and the others as sandbox-PID.\n"
	"  --json  one JSON array of what 'inspect --json' prints for each\n";
static const char usage_inspect[] =
	"Usage: sandlock inspect NAME [--json|--toml]\n"
	"\n"
	"Show one running sandbox: its pids, start time and command.\n"
	"  --json  the same as one JSON object\n"
	"  --toml  its policy as a profile ('sandlock run --profile-file' takes it)\n";
static const char usage_kill[] =
	"Usage: sandlock kill NAME\n"
	"\n"
	"End the running sandbox NAME, with every process in it (SIGKILL).\n";
static const char usage_stop[] =
	"Usage: sandlock stop [-t SECS] NAME\n"
	"\n"
	"Send SIGTERM to the command of the running sandbox NAME so its cleanup\n"
	"runs; if it still runs SECS (default 10) later, end it as 'kill' does.\n";

/*
 * --help or -h anywhere among a client command's arguments (none of them
 * take "--" or a value that may start with '-'): print its usage on
 * stdout, as `run --help` does, so every subcommand answers --help.
 */
static bool printed_help(int argc, char **argv, const char *usage)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return true;
		}
	return false;
}

/* A library run's name: its own, or NAME.PID (run/control.c). */
static bool valid_name(const char *name)
{
	char own[NAME_MAX_LEN + 1];
	const char *dot = strrchr(name, '.');
	size_t n = dot ? (size_t)(dot - name) : 0;
	if (sl_control_valid_name(name))
		return true;
	if (!dot || n == 0 || n > SL_CONTROL_NAME_MAX || !dot[1] ||
	    strspn(dot + 1, "0123456789") != strlen(dot + 1))
		return false;
	memcpy(own, name, n);
	own[n] = 0;
	return sl_control_valid_name(own);
}

/* The control directory the runs use (never made here); -1 if none. */
static int control_dir(char *out, size_t len, const char **why)
{
	return sl_control_dir(out, len, false, NULL, why);
}

/* A connection to path whose server is trusted (it holds the socket);
 * -1 (after saying why, for a server that is not) otherwise. */
static int connect_server(const char *path)
{
	int fd = sl_control_connect(path, false);
	pid_t pid;
	if (fd >= 0 && !sl_control_trusted_server(fd, path, &pid)) {
		fprintf(stderr, "sandlock: %s is not served by a sandlock run of yours (its server, "
		                "pid %d, is another user's, sandboxed, or does not hold it); not "
		                "trusting it\n", path, (int)pid);
		close(fd);
		return -1;
	}
	return fd;
}


/*
 * A connection to the run named name whose server is trusted: by its
 * socket file, else (deleted, or someone else's in its place) by its
 * abstract names.  -1 when none answers.
 */
static int connect_named(const char *name)
{
	char dir[SUN_LEN_MAX], path[SUN_LEN_MAX + NAME_MAX_LEN + 8], aname[SUN_LEN_MAX];
	const char *why;
	if (!valid_name(name)) {
		fprintf(stderr, "sandlock: invalid sandbox name '%s'\n", name);
		return -1;
	}
	if (control_dir(dir, sizeof dir, &why) < 0 ||
	    (size_t)snprintf(path, sizeof path, "%s/%s.sock", dir, name) >= SUN_LEN_MAX)
		return -1;
	int fd = access(path, F_OK) == 0 ? connect_server(path) : -1;
	for (int i = 0; fd < 0 && i < SL_CONTROL_ABSTRACT_TRIES; i++) {
		pid_t pid;
		sl_control_abstract_name(dir, name, i, aname, sizeof aname);
		fd = sl_control_connect(aname, true);
		if (fd >= 0 && !sl_control_trusted_abstract(fd, aname, &pid)) {
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
	sl_control_send(fd, req);
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
	sl_control_send(fd, req);
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
	sscanf(json_raw(j, "name"), "\"%79[^\"]\"", name);
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
	if (printed_help(argc, argv, usage_inspect))
		return 0;
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
			        usage_inspect);
			return 125;
		}
	}
	if (!name || (json && toml)) {
		fputs(usage_inspect, stderr);
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
	if (printed_help(argc, argv, usage_kill))
		return 0;
	if (argc != 2 || argv[1][0] == '-') {
		fputs(usage_kill, stderr);
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
	if (printed_help(argc, argv, usage_stop))
		return 0;
	if (argc == 4 && strcmp(argv[1], "-t") == 0) {
		if (cli_parse_seconds(argv[2], &grace_ms, &why)) {
			fprintf(stderr, "sandlock: stop %s '%s': %s\n", argv[1], argv[2], why);
			return 125;
		}
		i = 3;
	}
	if (argc != i + 1 || argv[i][0] == '-') {
		fputs(usage_stop, stderr);
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
	sl_control_sweep(dir, true); /* dead runs' files would fill v */
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d));) {
		size_t len = strlen(e->d_name);
		if (len >= 6 && strcmp(e->d_name + len - 5, ".sock") == 0)
			add_name(v, &n, max, e->d_name, len - 5);
	}
	if (d)
		closedir(d);
	char prefix[SUN_LEN_MAX + 1] = "@", line[512];
	sl_control_abstract_name(dir, "", 0, prefix + 1, sizeof prefix - 1);
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
	if (printed_help(argc, argv, usage_ps))
		return 0;
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc > 2 || (argc == 2 && !json)) {
		fputs(usage_ps, stderr);
		return 125;
	}
	char dir[SUN_LEN_MAX];
	const char *why;
	static char names[256][NAME_MAX_LEN + 1];
	int n = 0, k = control_dir(dir, sizeof dir, &why) == 0 ? run_names(dir, names, 256) : 0;
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
			sscanf(json_raw(buf, "name"), "\"%79[^\"]\"", name);
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
