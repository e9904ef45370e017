/*
 * seccomp.c — compiling linux.seccomp, and the in-sandbox step that
 * installs it.
 */
#include "seccomp.h"
#include "log.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* An OCI action name (+ errnoRet) as libseccomp's, or -1 (*bad set). */
static uint32_t action(const char *name, json_t *errno_ret, bool *bad)
{
	uint32_t ret = json_is_integer(errno_ret) ? (uint32_t)json_integer_value(errno_ret) : EPERM;
	*bad = false;
	if (!name)
		*bad = true;
	else if (strcmp(name, "SCMP_ACT_ALLOW") == 0)
		return SCMP_ACT_ALLOW;
	else if (strcmp(name, "SCMP_ACT_ERRNO") == 0)
		return SCMP_ACT_ERRNO(ret);
	else if (strcmp(name, "SCMP_ACT_KILL") == 0 || strcmp(name, "SCMP_ACT_KILL_THREAD") == 0)
		return SCMP_ACT_KILL_THREAD;
	else if (strcmp(name, "SCMP_ACT_KILL_PROCESS") == 0)
		return SCMP_ACT_KILL_PROCESS;
	else if (strcmp(name, "SCMP_ACT_TRAP") == 0)
		return SCMP_ACT_TRAP;
	else if (strcmp(name, "SCMP_ACT_LOG") == 0)
		return SCMP_ACT_LOG;
	else if (strcmp(name, "SCMP_ACT_TRACE") == 0)
		return SCMP_ACT_TRACE(ret);
	else
		*bad = true;
	return 0;
}

static int op(const char *name)
{
	static const struct { const char *n; int op; } ops[] = {
		{ "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT },
		{ "SCMP_CMP_LE", SCMP_CMP_LE }, { "SCMP_CMP_EQ", SCMP_CMP_EQ },
		{ "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
		{ "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
	};
	for (size_t i = 0; name && i < sizeof ops / sizeof *ops; i++)
		if (strcmp(ops[i].n, name) == 0)
			return ops[i].op;
	return -1;
}

/* One entry of linux.seccomp.syscalls: its action for each name. */
static int add_rule(scmp_filter_ctx ctx, json_t *r, size_t idx, uint32_t def)
{
	bool bad;
	const char *an = json_string_value(json_object_get(r, "action"));
	uint32_t act = action(an, json_object_get(r, "errnoRet"), &bad);
	if (bad) {
		oci_error("linux.seccomp.syscalls[%zu].action '%s': not supported (notify "
		          "needs a listener sandlock-oci does not serve)", idx, an ? an : "");
		return -1;
	}
	if (act == def)
		return 0; /* libseccomp refuses rules equal to the default */
	struct scmp_arg_cmp cmp[6];
	unsigned n = 0;
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(r, "args"), i, a) {
		int o = op(json_string_value(json_object_get(a, "op")));
		if (o < 0 || n == 6) {
			oci_error("linux.seccomp.syscalls[%zu].args[%zu]: bad op", idx, i);
			return -1;
		}
		cmp[n++] = (struct scmp_arg_cmp){
			.arg = (unsigned)json_integer_value(json_object_get(a, "index")),
			.op = (enum scmp_compare)o,
			.datum_a = (scmp_datum_t)json_integer_value(json_object_get(a, "value")),
			.datum_b = (scmp_datum_t)json_integer_value(json_object_get(a, "valueTwo")),
		};
	}
	json_t *nm;
	json_array_foreach(json_object_get(r, "names"), i, nm) {
		const char *name = json_string_value(nm);
		int nr = name ? seccomp_syscall_resolve_name(name) : __NR_SCMP_ERROR;
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a syscall of this arch: as runc, skipped */
		int rc = seccomp_rule_add_array(ctx, act, nr, n, cmp);
		if (rc < 0 && rc != -EEXIST) {
			oci_error("linux.seccomp.syscalls[%zu]: %s: %s", idx, name, strerror(-rc));
			return -1;
		}
	}
	return 0;
}

int oci_seccomp_compile(json_t *sc)
{
	if (!json_is_object(sc))
		return -1;
	bool bad;
	const char *dn = json_string_value(json_object_get(sc, "defaultAction"));
	uint32_t def = action(dn, json_object_get(sc, "defaultErrnoRet"), &bad);
	if (bad) {
		oci_error("linux.seccomp.defaultAction '%s': not supported", dn ? dn : "");
		return -2;
	}
	if (json_array_size(json_object_get(sc, "flags")))
		oci_warn("linux.seccomp.flags: not applied (optional)");
	if (json_object_get(sc, "listenerPath")) {
		oci_error("linux.seccomp.listenerPath: not supported (the sandbox's supervisor "
		          "already holds the notification listener)");
		return -2;
	}
	scmp_filter_ctx ctx = seccomp_init(def);
	if (!ctx)
		return -2;
	/* No thread sync, no NNP change: the step installs it itself. */
	seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	int fd = -2;
	size_t i;
	json_t *r;
	json_array_foreach(json_object_get(sc, "syscalls"), i, r) {
		if (add_rule(ctx, r, i, def) < 0)
			goto out;
	}
	fd = memfd_create("oci-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		oci_error("linux.seccomp: cannot compile the profile: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		fd = -2;
	}
out:
	seccomp_release(ctx);
	return fd;
}

int oci_helper_dir(const char *root, char *out, size_t cap)
{
	char path[OCI_PATH_MAX], tmp[OCI_PATH_MAX];
	if (oci_state_path(root, ".helper", out, cap) < 0 ||
	    oci_state_path(out, OCI_HELPER_NAME, path, sizeof path) < 0 ||
	    oci_state_path(out, OCI_HELPER_NAME ".tmp", tmp, sizeof tmp) < 0)
		return -1;
	mkdir(out, 0755);
	struct stat self, copy;
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (in < 0 || fstat(in, &self) < 0) {
		oci_error("cannot read /proc/self/exe: %s", strerror(errno));
		if (in >= 0)
			close(in);
		return -1;
	}
	/* Up to date: same size and mtime as this binary. */
	if (stat(path, &copy) == 0 && copy.st_size == self.st_size &&
	    copy.st_mtim.tv_sec == self.st_mtim.tv_sec &&
	    copy.st_mtim.tv_nsec == self.st_mtim.tv_nsec) {
		close(in);
		return 0;
	}
	/* A temporary renamed over it: concurrent creates never exec a half copy. */
	snprintf(tmp + strlen(tmp), sizeof tmp - strlen(tmp), ".%d", (int)getpid());
	int o = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	int rc = o < 0 ? -1 : 0;
	char buf[65536];
	ssize_t n;
	while (rc == 0 && (n = read(in, buf, sizeof buf)) != 0)
		rc = n < 0 || write(o, buf, (size_t)n) != n ? -1 : 0;
	struct timespec t[2] = { self.st_atim, self.st_mtim };
	if (rc == 0 && (futimens(o, t) < 0 || rename(tmp, path) < 0))
		rc = -1;
	if (rc < 0) {
		oci_error("cannot copy the seccomp step to %s: %s", path, strerror(errno));
		unlink(tmp);
	}
	close(in);
	if (o >= 0)
		close(o);
	return rc;
}

int oci_seccomp_exec(int argc, char **argv)
{
	if (argc < 3) {
		fputs("sandlock-oci seccomp-exec: FD CMD [ARGS...]\n", stderr);
		return 127;
	}
	int fd = atoi(argv[1]);
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size % sizeof(struct sock_filter)) {
		fprintf(stderr, "sandlock-oci: engine seccomp profile: bad fd %s\n", argv[1]);
		return 127;
	}
	struct sock_filter *f = malloc((size_t)st.st_size);
	if (!f || pread(fd, f, (size_t)st.st_size, 0) != st.st_size) {
		fprintf(stderr, "sandlock-oci: engine seccomp profile: %s\n", strerror(errno));
		return 127;
	}
	close(fd);
	struct sock_fprog prog = { .len = (unsigned short)(st.st_size / sizeof *f), .filter = f };
	/* no_new_privs is already set by sandlock (the filter needs it). */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		fprintf(stderr, "sandlock-oci: engine seccomp profile: %s\n", strerror(errno));
		return 127;
	}
	execvp(argv[2], argv + 2);
	fprintf(stderr, "sandlock-oci: exec %s: %s\n", argv[2], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
