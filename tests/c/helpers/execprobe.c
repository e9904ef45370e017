/*
 * execprobe.c — hostile probes of the exec and chdir path rewrites
 * (src/paths/execpath.c), run in a COW workdir by tests/c/test_cow.c.
 *   execprobe open FILE         open FILE for reading (the control)
 *   execprobe shortfd SECRET    a staged link to SECRET exec'd with argv
 *                               right behind the path (the /dev/fd form);
 *                               prints every fd that reads something
 *   execprobe execat PATH OFF   exec PATH with argv OFF bytes behind the
 *                               path string; prints what fds read
 *   execprobe spawn_nonexec     posix_spawnp("true") with a staged,
 *                               non-executable ./true first on PATH
 *   execprobe argv_flood N      execve of a staged program with N argv
 *                               slots pointing into the path's range
 *   execprobe chdir_edge        chdir into a layer-only directory named by
 *                               a string that ends a mapping
 * Each also runs outside a sandbox (the control).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Every fd from 3 up that reads something: "fd N: <first line>". */
static void show_fds(void)
{
	for (int i = 3; i < 64; i++) {
		char c[256];
		ssize_t n = pread(i, c, sizeof c - 1, 0);
		if (n > 0) {
			c[n] = '\0';
			c[strcspn(c, "\n")] = '\0';
			printf("fd %d: %s\n", i, c);
		}
	}
}

/* exec path with the argv array off bytes behind the path string: a
 * longer path cannot be written there (the short /dev/fd form then). */
static int exec_at(const char *path, size_t off)
{
	static char buf[512] __attribute__((aligned(16)));
	static char a0[] = "x";
	if (off < strlen(path) + 1 || off + 16 > sizeof buf)
		return 2;
	strcpy(buf, path);
	char **av = (char **)(void *)(buf + (off & ~(size_t)7));
	av[0] = a0;
	av[1] = NULL;
	long r = syscall(SYS_execve, buf, av, NULL);
	printf("execve: %ld %s\n", r, strerror(errno));
	show_fds();
	return 0;
}

static int shortfd(const char *secret)
{
	int fd = open(secret, O_RDONLY);
	printf("direct: %s\n", fd < 0 ? strerror(errno) : "opened");
	if (fd >= 0)
		close(fd);
	unlink("l");
	if (symlink(secret, "l") < 0)
		return perror("symlink"), 1;
	return exec_at("l", 32);
}

static int spawn_nonexec(void)
{
	int fd = open("true", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10)
		return perror("true"), 1;
	close(fd);
	char cwd[2048], path[4200];
	if (!getcwd(cwd, sizeof cwd))
		return 1;
	snprintf(path, sizeof path, "PATH=%s:/usr/bin:/bin", cwd);
	putenv(path);
	pid_t pid;
	char *argv[] = { "true", NULL };
	int r = posix_spawnp(&pid, "true", NULL, NULL, argv, environ);
	int st = -1;
	if (!r)
		waitpid(pid, &st, 0);
	printf("posix_spawnp: %d status %d\n", r, st);
	return 0;
}

static int argv_flood(long n)
{
	int fd = open("prog", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0 || write(fd, "#!/bin/sh\n", 10) != 10)
		return perror("prog"), 1;
	close(fd);
	size_t len = 64 * 1024;
	char *s = malloc(len + 8);
	char **av = malloc((size_t)(n + 1) * sizeof *av);
	if (!s || !av)
		return 1;
	strcpy(s, "prog"); /* the path; the one long argv string follows it */
	memset(s + 5, 'A', len);
	s[len + 5] = '\0';
	for (long i = 0; i < n; i++)
		av[i] = s + 5;
	av[n] = NULL;
	long r = syscall(SYS_execve, s, av, NULL);
	printf("execve: %ld %s\n", r, strerror(errno));
	return 0;
}

static int chdir_edge(void)
{
	if (mkdir("d", 0755) < 0)
		return perror("mkdir"), 1;
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	munmap(p + pg, (size_t)pg);
	char *s = p + pg - 2;
	strcpy(s, "d");
	int r = chdir(s);
	printf("chdir at the end of a mapping: %s\n", r ? strerror(errno) : "ok");
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	const char *what = argc > 1 ? argv[1] : "";
	if (!strcmp(what, "open") && argc > 2) {
		int fd = open(argv[2], O_RDONLY);
		printf("direct: %s\n", fd < 0 ? strerror(errno) : "opened");
		return 0;
	}
	if (!strcmp(what, "execat") && argc > 3)
		return exec_at(argv[2], (size_t)atol(argv[3]));
	if (!strcmp(what, "shortfd") && argc > 2)
		return shortfd(argv[2]);
	if (!strcmp(what, "spawn_nonexec"))
		return spawn_nonexec();
	if (!strcmp(what, "argv_flood") && argc > 2)
		return argv_flood(atol(argv[2]));
	if (!strcmp(what, "chdir_edge"))
		return chdir_edge();
	fprintf(stderr, "usage: execprobe open FILE | shortfd SECRET | execat PATH OFF | spawn_nonexec | "
	                "argv_flood N | chdir_edge\n");
	return 2;
}
