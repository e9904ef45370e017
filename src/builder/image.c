/*
 * image.c — run inside a local container image's filesystem, without a
 * container runtime (builder `image`, CLI --image).
 *
 * The engine's own CLI (podman, else docker) answers what the image is
 * (`image inspect`: id, command, environment, working directory) and
 * gives its flattened filesystem (`create` + `export`: layers and
 * whiteouts applied by the engine, nothing run; the stopped container is
 * removed at once).  The tree is extracted once into
 * $XDG_CACHE_HOME/sandlock/images/<id> (else ~/.cache/...): made under a
 * temporary name and renamed into place, so a killed extraction never
 * leaves a half tree under the final name, and a later run reuses it.  An
 * image that is not in the local store is an error: nothing is pulled.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "builder/image.h"

extern char **environ;

#define SEP "\x1f" /* between list items in the inspect output */
#define MAX_OUT (1 << 20)

/* podman, else docker: the first on PATH. */
static const char *engine(void)
{
	static const char *const names[] = { "podman", "docker" };
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	for (size_t i = 0; i < 2; i++) {
		const char *p = path ? path : "/usr/bin:/bin";
		while (*p) {
			size_t n = strcspn(p, ":");
			snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, names[i]);
			if (access(buf, X_OK) == 0)
				return names[i];
			p += n + (p[n] == ':');
		}
	}
	return NULL;
}

static int wait_status(pid_t pid)
{
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* Run argv; its stdout (NUL-terminated, heap) in *out when out is given.
 * The exit status, or -1 (cannot run). */
static int run_cmd(char *const argv[], char **out)
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		return -1;
	}
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	for (ssize_t n = 1; buf && n > 0;) {
		if (len + 1 >= cap && cap < MAX_OUT) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
		}
		n = read(pfd[0], buf + len, cap - len - 1);
		len += n > 0 ? (size_t)n : 0;
	}
	close(pfd[0]);
	int st = wait_status(pid);
	if (buf)
		buf[len] = '\0';
	if (out)
		*out = buf;
	else
		free(buf);
	return st;
}

/* from | to; 0 when both succeed, else the first failure's status. */
static int run_pipe(char *const from[], char *const to[])
{
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -1;
	posix_spawn_file_actions_t fa, fb;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_init(&fb);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fb, pfd[0], 0);
	pid_t a = -1, b = -1;
	int ra = posix_spawnp(&a, from[0], &fa, NULL, from, environ);
	int rb = ra ? -1 : posix_spawnp(&b, to[0], &fb, NULL, to, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawn_file_actions_destroy(&fb);
	close(pfd[0]);
	close(pfd[1]);
	int sa = ra ? -1 : wait_status(a);
	int sb = rb ? -1 : wait_status(b);
	return sa ? sa : sb;
}

/* Split s at SEP into v (empty items dropped). */
static int split(const char *s, size_t n, sl_strvec *v)
{
	char *dup = strndup(s, n), *save = NULL;
	if (!dup)
		return -1;
	int rc = 0;
	for (char *t = strtok_r(dup, SEP, &save); t && !rc; t = strtok_r(NULL, SEP, &save))
		rc = sl_strvec_push(v, t);
	free(dup);
	return rc;
}

/* The inspect output: id, workdir, entrypoint, cmd, env on five lines. */
static int parse_inspect(char *out, char **id, struct sl_image *img)
{
	char *line[5];
	char *p = out;
	for (int i = 0; i < 5; i++) {
		char *nl = strchr(p, '\n');
		if (!nl)
			return -1;
		*nl = '\0';
		line[i] = p;
		p = nl + 1;
	}
	if (!*line[0] || strchr(line[0], '/'))
		return -1;
	*id = sl_strdup(line[0]);
	if (*line[1])
		img->workdir = sl_strdup(line[1]);
	if (!*id || split(line[2], strlen(line[2]), &img->argv) < 0 ||
	    split(line[3], strlen(line[3]), &img->argv) < 0 ||
	    split(line[4], strlen(line[4]), &img->env) < 0)
		return -1;
	for (size_t i = 0; i < img->env.n; i++)
		if (strncmp(img->env.v[i], "PATH=", 5) == 0)
			return 0;
	/* As container engines do for an image without one. */
	return sl_strvec_push(&img->env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:"
	                                 "/sbin:/bin");
}

/* mkdir -p path (each new level 0700): 0 or -1. */
static int make_dirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir(path, 0700);
		*p = '/';
		if (rc < 0 && errno != EEXIST)
			return -1;
	}
	return mkdir(path, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

/* The cache directory for images (made), or NULL. */
static char *cache_dir(void)
{
	const char *x = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	char *dir = x && *x && x[0] == '/' ? sl_asprintf("%s/sandlock/images", x)
	            : home && *home ? sl_asprintf("%s/.cache/sandlock/images", home) : NULL;
	if (dir && make_dirs(dir) == 0)
		return dir;
	free(dir);
	return NULL;
}

/* The image's filesystem extracted into dest (new): create + export. */
static int extract(const char *eng, const char *id, const char *dest, char **msg)
{
	char *cid = NULL;
	char *create[] = { (char *)eng, "create", "--pull=never", (char *)id,
	                   "/sandlock-image-export", NULL };
	if (run_cmd(create, &cid) != 0 || !cid || !*cid) {
		free(cid);
		*msg = sl_asprintf("image: '%s create' of %.12s failed", eng, id);
		return -1;
	}
	cid[strcspn(cid, "\n")] = '\0';
	/* Device nodes cannot be made unprivileged, and the sandbox's /dev
	 * is its own (devmin.c): the image's /dev entries are left out. */
	char *exp[] = { (char *)eng, "export", cid, NULL };
	char *tar[] = { "tar", "-x", "-C", (char *)dest, "--exclude=./dev/*", "--exclude=dev/*",
	                NULL };
	int rc = run_pipe(exp, tar);
	char *rm[] = { (char *)eng, "rm", "-f", cid, NULL };
	run_cmd(rm, NULL);
	free(cid);
	if (rc != 0)
		*msg = sl_asprintf("image: extracting %.12s failed (%s export | tar -x: exit %d)",
		                   id, eng, rc);
	return rc ? -1 : 0;
}

/* dir/<id>, extracted there unless a previous run did. */
static char *cached_rootfs(const char *eng, const char *id, char **msg)
{
	char *dir = cache_dir();
	if (!dir) {
		*msg = sl_strdup("image: no cache directory (set XDG_CACHE_HOME or HOME)");
		return NULL;
	}
	char *final = sl_asprintf("%s/%s", dir, id);
	char *tmp = sl_asprintf("%s/.tmp-%s-%d", dir, id, (int)getpid());
	free(dir);
	struct stat st;
	if (final && stat(final, &st) == 0 && S_ISDIR(st.st_mode)) {
		free(tmp);
		return final;
	}
	if (!final || !tmp || mkdir(tmp, 0755) < 0 || extract(eng, id, tmp, msg) < 0 ||
	    (rename(tmp, final) < 0 && errno != ENOTEMPTY && errno != EEXIST)) {
		if (!*msg)
			*msg = sl_asprintf("image: cannot make its rootfs in the cache: %s",
			                   strerror(errno));
		if (tmp) {
			char *rm[] = { "rm", "-rf", tmp, NULL };
			run_cmd(rm, NULL);
		}
		free(tmp);
		free(final);
		return NULL;
	}
	if (stat(tmp, &st) == 0) { /* another run renamed its copy first */
		char *rm[] = { "rm", "-rf", tmp, NULL };
		run_cmd(rm, NULL);
	}
	free(tmp);
	return final;
}

int sl_image_resolve(const char *ref, struct sl_image *img, char **msg)
{
	memset(img, 0, sizeof *img);
	*msg = NULL;
	const char *eng = engine();
	if (!eng) {
		*msg = sl_strdup("image: neither podman nor docker is on PATH");
		return -1;
	}
	char fmt[] = "{{.Id}}\n{{.Config.WorkingDir}}\n"
	             "{{range .Config.Entrypoint}}{{.}}{{\"" SEP "\"}}{{end}}\n"
	             "{{range .Config.Cmd}}{{.}}{{\"" SEP "\"}}{{end}}\n"
	             "{{range .Config.Env}}{{.}}{{\"" SEP "\"}}{{end}}\n";
	char *argv[] = { (char *)eng, "image", "inspect", "--format", fmt, (char *)ref, NULL };
	char *out = NULL, *id = NULL;
	int rc = run_cmd(argv, &out);
	if (rc != 0 || !out || parse_inspect(out, &id, img) < 0) {
		*msg = sl_asprintf("image '%s': not found in the local %s store (images are never "
		                   "pulled: '%s pull' or '%s import' it first)", ref, eng, eng, eng);
		free(out);
		free(id);
		sl_image_free(img);
		return -1;
	}
	free(out);
	img->rootfs = cached_rootfs(eng, id, msg);
	free(id);
	if (!img->rootfs) {
		sl_image_free(img);
		return -1;
	}
	return 0;
}

void sl_image_free(struct sl_image *img)
{
	free(img->rootfs);
	free(img->workdir);
	sl_strvec_free(&img->argv);
	sl_strvec_free(&img->env);
	memset(img, 0, sizeof *img);
}
