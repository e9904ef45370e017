/*
 * trace.c — --trace and learn (see trace.h): the handler that watches the
 * calls naming a file, the verdicts by the run's rules, what learn
 * records.  The paths' spelling is tracepath.c's; the profile learn
 * prints from the record, learnprofile.c's.
 */
#include "trace.h"

#include "learnprofile.h"
#include "options.h"
/* The filter's rule table (libsandlock.a): which rule a refused call broke. */
#include "launch/filter.h"
#include "tracepath.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum access { ACC_NONE, ACC_READ, ACC_WRITE, ACC_EXEC };

struct cli_trace {
	FILE *out;  /* --trace: JSON lines; NULL in learn mode */
	bool learn;
	bool tty;   /* the CLI's stdio is a terminal: the sandbox may open /dev/tty */
	bool human; /* out is a terminal: the message in words, not JSON */
	struct cli_list read, write, deny; /* canonical roots of the rules */
	struct cli_list used_read, used_write; /* learn: canonical paths used */
	int nr_open, nr_openat, nr_creat, nr_execve, nr_execveat;
	int nr_change[16]; /* k_changes' numbers (-1: not on this architecture) */
};

/*
 * The calls that make, remove or rename a name (Landlock's MAKE_*,
 * REMOVE_*, REFER rights: the directory must be under a -w tree): which
 * argument holds the dirfd (-1: AT_FDCWD) and the path, for the name it
 * removes or replaces (1) and the one it makes (2).  make_only: an
 * existing target is EEXIST, never a denial.
 */
static const struct {
	const char *name;
	signed char d1, p1, d2, p2;
	bool make_only;
} k_changes[] = {
	{ "mkdir", -1, -1, -1, 0, true },     { "mkdirat", -1, -1, 0, 1, true },
	{ "mknod", -1, -1, -1, 0, true },     { "mknodat", -1, -1, 0, 1, true },
	{ "symlink", -1, -1, -1, 1, true },   { "symlinkat", -1, -1, 1, 2, true },
	{ "link", -1, -1, -1, 1, true },      { "linkat", -1, -1, 2, 3, true },
	{ "rmdir", -1, 0, -1, -1, false },    { "unlink", -1, 0, -1, -1, false },
	{ "unlinkat", 0, 1, -1, -1, false },  { "rename", -1, 0, -1, 1, false },
	{ "renameat", 0, 1, 2, 3, false },    { "renameat2", 0, 1, 2, 3, false },
	{ "truncate", -1, 0, -1, -1, false },
};
#define N_CHANGES (sizeof k_changes / sizeof k_changes[0])
_Static_assert(N_CHANGES <= 16, "nr_change holds k_changes");

/* ---------------------------------------------------------------- verdicts */

struct verdict {
	const char *reason; /* NULL: the rules allow it */
	const char *flag;   /* "-r", "-w", or NULL when no flag allows it */
	char *allow;        /* the flag's argument (heap) */
};

/* The path a grant should name: a device file as itself (-w /dev/null,
 * never all of /dev), anything else as its directory. */
static char *grant_path(const char *path, bool exists)
{
	struct stat st;
	if (exists && stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)))
		return strdup(path);
	return cli_path_grant_dir(path, exists);
}

static struct verdict judge(const struct cli_trace *t, const char *path, bool exists,
                            enum access acc)
{
	struct verdict v = { NULL, NULL, NULL };
	if (acc != ACC_EXEC && cli_path_default_device(t->tty, path))
		return v;
	const char *d = cli_path_first_under(&t->deny, path);
	if (d) {
		v.reason = "inside a -d path";
		v.allow = strdup(d);
		return v;
	}
	bool writable = cli_path_first_under(&t->write, path) != NULL;
	bool readable = writable || cli_path_first_under(&t->read, path) != NULL;
	if (acc == ACC_WRITE && !writable) {
		v.reason = "not under any -w";
		v.flag = "-w";
	} else if (acc != ACC_WRITE && !readable) {
		v.reason = "not under any -r/-w";
		v.flag = "-r";
	}
	if (v.reason)
		v.allow = grant_path(path, exists);
	return v;
}

static const char *access_name(enum access a)
{
	return a == ACC_WRITE ? "write" : a == ACC_EXEC ? "execute" : "read";
}

/* One event: a JSON line for a pipe or file, its message in words for a
 * person at a terminal.  Takes o. */
static void print_event(const struct cli_trace *t, json_t *o)
{
	const char *msg = json_string_value(json_object_get(o, "message"));
	char *s = t->human && msg ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (s)
		fprintf(t->out, "%s\n", s);
	else if (t->human && msg)
		fprintf(t->out, "sandlock: trace: %s\n", msg);
	fflush(t->out);
	free(s);
	json_decref(o);
}

static void emit_denial(const struct cli_trace *t, const char *syscall, uint32_t pid,
                        const char *path, enum access acc, const struct verdict *v)
{
	char *msg = NULL;
	if (v->flag) {
		if (asprintf(&msg, "denied %s %s (%s): %s; allow with %s %s", syscall, path,
			     access_name(acc), v->reason, v->flag, v->allow ? v->allow : "?") < 0)
			msg = NULL;
	} else if (asprintf(&msg, "denied %s %s (%s): %s %s", syscall, path, access_name(acc),
			    v->reason, v->allow ? v->allow : "") < 0) {
		msg = NULL;
	}
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "event", "denied", "syscall",
			      syscall, "pid", (json_int_t)pid, "path", path, "access",
			      access_name(acc), "reason", v->reason);
	if (!o) {
		free(msg);
		return; /* e.g. a path that is not UTF-8: nothing safe to print */
	}
	if (v->flag && v->allow) {
		json_object_set_new(o, "allow_flag", json_string(v->flag));
		json_object_set_new(o, "allow_path", json_string(v->allow));
	}
	if (!v->flag && v->allow)
		json_object_set_new(o, "deny_path", json_string(v->allow));
	if (msg)
		json_object_set_new(o, "message", json_string(msg));
	free(msg);
	print_event(t, o);
}

/* learn: remember path (for reading or writing). */
static void record(struct cli_trace *t, const char *path, bool exists, enum access acc)
{
	struct cli_list *l = acc == ACC_WRITE ? &t->used_write : &t->used_read;
	char *p = acc == ACC_WRITE && !exists ? cli_path_grant_dir(path, false) : strdup(path);
	if (!p)
		return;
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], p) == 0) {
			free(p);
			return;
		}
	(void)cli_list_add(l, p);
	free(p);
}

/* ---------------------------------------------------------------- exec's interpreters */

/*
 * The kernel itself opens what execve needs besides the file: the "#!"
 * interpreter of a script and the ELF program interpreter (the dynamic
 * loader).  Landlock checks those opens too, so the trace follows them.
 * Returns the interpreter's path (heap) or NULL.
 */
static char *interpreter_of(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char head[256];
	ssize_t n = pread(fd, head, sizeof(head) - 1, 0);
	char *out = NULL;
	if (n > 2 && head[0] == '#' && head[1] == '!') {
		head[n] = '\0';
		char *s = head + 2;
		s += strspn(s, " \t");
		size_t len = strcspn(s, " \t\n");
		if (len && s[0] == '/')
			out = strndup(s, len);
	} else if (n >= (ssize_t)sizeof(Elf64_Ehdr) && memcmp(head, ELFMAG, SELFMAG) == 0 &&
		   head[EI_CLASS] == ELFCLASS64) {
		Elf64_Ehdr eh;
		memcpy(&eh, head, sizeof(eh));
		for (unsigned i = 0; i < eh.e_phnum && !out; i++) {
			Elf64_Phdr ph;
			off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);
			if (pread(fd, &ph, sizeof(ph), at) != (ssize_t)sizeof(ph))
				break;
			if (ph.p_type != PT_INTERP || ph.p_filesz == 0 || ph.p_filesz > PATH_MAX)
				continue;
			char *s = calloc(1, ph.p_filesz + 1);
			if (s && pread(fd, s, ph.p_filesz, (off_t)ph.p_offset) == (ssize_t)ph.p_filesz &&
			    s[0] == '/')
				out = s;
			else
				free(s);
		}
	}
	close(fd);
	return out;
}

static void judge_or_record(struct cli_trace *t, const char *syscall, uint32_t pid,
                            const char *path, bool exists, enum access acc);

/* Follow interpreters a few levels (a script run by a dynamic binary). */
static void follow_interpreters(struct cli_trace *t, uint32_t pid, const char *path)
{
	char *cur = strdup(path);
	for (int depth = 0; cur && depth < 4; depth++) {
		char *interp = interpreter_of(cur);
		free(cur);
		cur = NULL;
		bool exists = false;
		char *canon = interp ? cli_path_canonical(interp, &exists) : NULL;
		free(interp);
		if (!canon || !exists) {
			free(canon);
			return;
		}
		judge_or_record(t, "execve (interpreter)", pid, canon, true, ACC_EXEC);
		cur = canon;
	}
	free(cur);
}

/* ---------------------------------------------------------------- the handler */

struct call_args {
	const char *name;
	int dirfd;
	uint64_t path;
	enum access acc;
	bool creates;
};

static enum access open_access(uint64_t flags)
{
	if (flags & O_PATH)
		return ACC_NONE; /* Landlock does not check O_PATH opens */
	int mode = (int)(flags & O_ACCMODE);
	if (mode != O_RDONLY || (flags & (O_TRUNC | O_CREAT)))
		return ACC_WRITE;
	return ACC_READ;
}

/* Which file a trapped call names; false for calls the trace ignores. */
static bool decode(const struct cli_trace *t, const sandlock_notif_t *n, struct call_args *c)
{
	const uint64_t *a = n->args;
	c->dirfd = AT_FDCWD;
	c->creates = false;
	if (n->syscall_nr == t->nr_openat) {
		c->name = "openat";
		c->dirfd = (int)(int32_t)a[0];
		c->path = a[1];
		c->acc = open_access(a[2]);
		c->creates = a[2] & O_CREAT;
	} else if (n->syscall_nr == t->nr_open) {
		c->name = "open";
		c->path = a[0];
		c->acc = open_access(a[1]);
		c->creates = a[1] & O_CREAT;
	} else if (n->syscall_nr == t->nr_creat) {
		c->name = "creat";
		c->path = a[0];
		c->acc = ACC_WRITE;
		c->creates = true;
	} else if (n->syscall_nr == t->nr_execve) {
		c->name = "execve";
		c->path = a[0];
		c->acc = ACC_EXEC;
	} else if (n->syscall_nr == t->nr_execveat) {
		c->name = "execveat";
		c->dirfd = (int)(int32_t)a[0];
		c->path = a[1];
		c->acc = ACC_EXEC;
	} else {
		return false;
	}
	return c->acc != ACC_NONE;
}

/* The canonical path a call names (args dirfd, addr), *exists set; NULL
 * when it cannot be told (unreadable, empty: AT_EMPTY_PATH on an fd). */
static char *call_path(const sandlock_notif_t *n, sandlock_mem_t *mem, int dirfd, uint64_t addr,
                       bool *exists)
{
	char *raw = sandlock_mem_read_string(mem, addr, PATH_MAX);
	if (!raw || !raw[0]) {
		sandlock_string_free(raw);
		return NULL;
	}
	char *abs = cli_path_absolute(n->pid, dirfd, raw);
	sandlock_string_free(raw);
	char *path = abs ? cli_path_canonical(abs, exists) : NULL;
	free(abs);
	return path;
}

/* One name a change call removes (make = false) or makes. */
static void judge_change(struct cli_trace *t, const sandlock_notif_t *n, sandlock_mem_t *mem,
                         size_t k, int d, int p, bool make)
{
	if (p < 0)
		return;
	int dirfd = d < 0 ? AT_FDCWD : (int)(int32_t)n->args[d];
	bool exists = false;
	char *path = call_path(n, mem, dirfd, n->args[p], &exists);
	/* A name to remove that is not there is ENOENT; one to make that is
	 * there, EEXIST: neither is a denial. */
	if (path && (make ? !(exists && k_changes[k].make_only) : exists))
		judge_or_record(t, k_changes[k].name, n->pid, path, exists, ACC_WRITE);
	free(path);
}

/* mkdir, unlink, rename, ...: true if n is one (judged here). */
static bool on_change(struct cli_trace *t, const sandlock_notif_t *n, sandlock_mem_t *mem)
{
	for (size_t k = 0; k < N_CHANGES; k++) {
		if (t->nr_change[k] < 0 || n->syscall_nr != t->nr_change[k])
			continue;
		judge_change(t, n, mem, k, k_changes[k].d1, k_changes[k].p1, false);
		judge_change(t, n, mem, k, k_changes[k].d2, k_changes[k].p2, true);
		return true;
	}
	return false;
}

static int32_t on_call(void *ud, const sandlock_notif_t *n, sandlock_mem_t *mem,
                       sandlock_action_t *out)
{
	struct cli_trace *t = ud;
	sandlock_action_set_continue(out); /* the kernel decides, always */
	struct call_args c;
	if (on_change(t, n, mem) || !decode(t, n, &c))
		return 0;
	bool exists = false;
	char *path = call_path(n, mem, c.dirfd, c.path, &exists);
	/* A missing file is ENOENT, not a denial, unless it is being created. */
	if (path && (exists || c.creates)) {
		judge_or_record(t, c.name, n->pid, path, exists, c.acc);
		if (c.acc == ACC_EXEC && exists)
			follow_interpreters(t, n->pid, path);
	}
	free(path);
	return 0;
}

static void judge_or_record(struct cli_trace *t, const char *syscall, uint32_t pid,
                            const char *path, bool exists, enum access acc)
{
	if (t->learn) {
		record(t, path, exists, acc);
		return;
	}
	struct verdict v = judge(t, path, exists, acc);
	if (v.reason)
		emit_denial(t, syscall, pid, path, acc, &v);
	free(v.allow);
}

/* ---------------------------------------------------------------- supervisor decisions */

/* Why a builtin refuses, and what (if anything) would allow it. */
static const char *decision_hint(const char *by)
{
	if (strcmp(by, "process count") == 0)
		return "the sandbox reached its --max-processes limit; raise it with -P";
	if (strcmp(by, "metadata guard") == 0)
		return "metadata may change only inside a -w tree and outside -d paths; "
		       "allow with -w";
	if (strcmp(by, "socket destinations") == 0)
		return "the destination is not allowed; allow it with --net-allow "
		       "(--allow-unix for a unix socket)";
	if (strcmp(by, "argument rules") == 0)
		return "refused by the filter's argument rules; no flag allows it";
	if (strcmp(by, "SysV IPC") == 0)
		return "SysV IPC is the host's; allow with --extra-allow-syscalls sysv_ipc";
	return "refused by the supervisor";
}

/* Which rule of the filter refused d ("rule" in the JSON), and the hint:
 * the argument rule broken, or the blocklist / --extra-deny-syscalls.
 * NULL: not the filter's; *hint left as decision_hint says. */
static const char *filter_rule(const sandlock_decision_t *d, const char **hint)
{
	static const struct sl_filter_policy k_default;
	if (strcmp(d->decided_by, "syscall filter") == 0) {
		bool listed = sl_filter_is_blocked(&k_default, d->notif->syscall_nr);
		*hint = listed ? "sandlock's blocklist refuses it (it widens the kernel's attack "
		                 "surface); no flag allows it"
		               : "refused as --extra-deny-syscalls asked";
		return listed ? "blocklist" : "--extra-deny-syscalls";
	}
	bool gate = false;
	const char *rule = strcmp(d->decided_by, "argument rules") == 0
		                   ? sl_filter_arg_rule(NULL, d->notif, &gate)
		                   : NULL;
	if (rule)
		*hint = gate ? "allow the destination with --net-allow udp://HOST:PORT (or "
		               "icmp://HOST)"
		             : "refused in every sandbox; no flag allows it";
	return rule;
}

/* An errno a builtin answered is a refusal (EPERM, EACCES, a limit
 * reached), not the call's ordinary result: a COW workdir or a chroot
 * performing a call answers ENOENT, EEXIST, ENOTDIR... as the kernel
 * would, and those were reported as denials of calls that did their job. */
static bool refusal(const char *by, int e)
{
	if (e == EPERM || e == EACCES)
		return true;
	if (strcmp(by, "process count") == 0)
		return e == EAGAIN;
	if (strcmp(by, "copy-on-write workdir") == 0)
		return e == ENOSPC; /* max_disk */
	return false;
}

void cli_trace_decision(void *ud, const sandlock_decision_t *d)
{
	struct cli_trace *t = ud;
	uint32_t kind = d->action->kind;
	/* The trace's own handler always continues; report refusals only. */
	if (!t->out || !d->decided_by || strcmp(d->decided_by, "handler") == 0 ||
	    (kind != SANDLOCK_ACTION_ERRNO && kind != SANDLOCK_ACTION_KILL) ||
	    (kind == SANDLOCK_ACTION_ERRNO && !refusal(d->decided_by, d->action->u.errno_value)))
		return;
	char *name = sandlock_syscall_name(d->notif->syscall_nr);
	json_t *o = json_pack("{s:s, s:s, s:i, s:s, s:s}", "event", "denied", "syscall",
			      name ? name : "?", "pid", (json_int_t)d->notif->pid, "by",
			      d->decided_by, "action", kind == SANDLOCK_ACTION_KILL ? "kill" : "errno");
	if (o && kind == SANDLOCK_ACTION_ERRNO) {
		int e = d->action->u.errno_value;
		const char *en = strerrorname_np(e);
		json_object_set_new(o, "errno", json_integer(e));
		if (en)
			json_object_set_new(o, "errno_name", json_string(en));
	}
	const char *hint = decision_hint(d->decided_by);
	const char *rule = filter_rule(d, &hint);
	if (o && rule)
		json_object_set_new(o, "rule", json_string(rule));
	char *msg = NULL;
	if (o && asprintf(&msg, "denied %s (%s%s%s): %s", name ? name : "?", d->decided_by,
			  rule ? ": " : "", rule ? rule : "", hint) >= 0) {
		json_object_set_new(o, "message", json_string(msg));
		free(msg);
	}
	sandlock_string_free(name);
	if (o)
		print_event(t, o);
}

/* ---------------------------------------------------------------- setup */

/* A --workdir tree is read and written by the run (writes are staged by
 * the supervisor, which decides them before this trace sees them): its
 * files are never "not under any -r/-w". */
static int add_workdir(struct cli_trace *t, const struct cli_cfg *cfg)
{
	for (size_t i = 0; i < cfg->ops.n; i++) {
		if (cfg->ops.v[i].id != OPT_WORKDIR || !cfg->ops.v[i].arg)
			continue;
		char *c = realpath(cfg->ops.v[i].arg, NULL);
		int rc = c ? cli_list_add(&t->read, c) | cli_list_add(&t->write, c) : 0;
		free(c);
		if (rc < 0)
			return -1;
	}
	return 0;
}

struct cli_trace *cli_trace_new(const struct cli_cfg *cfg, FILE *out, bool learn)
{
	struct cli_trace *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->out = out;
	t->human = out && isatty(fileno(out));
	t->learn = learn;
	t->tty = isatty(0) || isatty(1) || isatty(2);
	if (cli_path_canon_list(&t->read, &cfg->read) < 0 ||
	    cli_path_canon_list(&t->write, &cfg->write) < 0 ||
	    cli_path_canon_list(&t->deny, &cfg->deny) < 0 || add_workdir(t, cfg) < 0) {
		cli_trace_free(t);
		return NULL;
	}
	t->nr_open = (int)sandlock_syscall_nr("open");
	t->nr_openat = (int)sandlock_syscall_nr("openat");
	t->nr_creat = (int)sandlock_syscall_nr("creat");
	t->nr_execve = (int)sandlock_syscall_nr("execve");
	t->nr_execveat = (int)sandlock_syscall_nr("execveat");
	for (size_t i = 0; i < N_CHANGES; i++)
		t->nr_change[i] = (int)sandlock_syscall_nr(k_changes[i].name);
	return t;
}

/* Why cfg's rules refuse acc on path and the flag that allows it, or NULL
 * (allowed; or missing, unless a write may create it). */
static char *access_hint(const struct cli_cfg *cfg, const char *path, enum access acc)
{
	struct cli_trace *t = cli_trace_new(cfg, NULL, false);
	bool exists = false;
	char *canon = t ? cli_path_canonical(path, &exists) : NULL;
	char *hint = NULL;
	if (canon && (exists || acc == ACC_WRITE)) {
		struct verdict v = judge(t, canon, exists, acc);
		if (v.reason && asprintf(&hint, "%s; allow with %s %s", v.reason,
		                         v.flag ? v.flag : "no flag (remove the -d)",
		                         v.allow ? v.allow : "") < 0)
			hint = NULL;
		free(v.allow);
	}
	free(canon);
	cli_trace_free(t);
	return hint;
}

char *cli_trace_exec_hint(const struct cli_cfg *cfg, const char *path)
{
	return access_hint(cfg, path, ACC_EXEC);
}

char *cli_trace_path_hint(const struct cli_cfg *cfg, const char *path, bool write)
{
	return access_hint(cfg, path, write ? ACC_WRITE : ACC_READ);
}

void cli_trace_free(struct cli_trace *t)
{
	if (!t)
		return;
	cli_list_free(&t->read);
	cli_list_free(&t->write);
	cli_list_free(&t->deny);
	cli_list_free(&t->used_read);
	cli_list_free(&t->used_write);
	free(t);
}

size_t cli_trace_registrations(struct cli_trace *t, sandlock_registration_t *regs, size_t max)
{
	/* One handler for all of them; a run frees a handler listed several
	 * times once, and t outlives the run, so there is nothing to free. */
	sandlock_handler_t *h = sandlock_handler_new(on_call, t, NULL, SANDLOCK_EXCEPTION_CONTINUE);
	if (!h)
		return 0;
	static const char *const names[] = { "open", "openat", "creat", "execve", "execveat" };
	size_t n = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < max; i++)
		if (sandlock_syscall_nr(names[i]) >= 0)
			regs[n++] = (sandlock_registration_t){ names[i], h };
	for (size_t i = 0; i < N_CHANGES && n < max; i++)
		if (t->nr_change[i] >= 0)
			regs[n++] = (sandlock_registration_t){ k_changes[i].name, h };
	if (n == 0)
		sandlock_handler_free(h);
	return n;
}

/* ---------------------------------------------------------------- learn's profile */

int cli_trace_print_profile(const struct cli_trace *t, const struct cli_cfg *cfg,
                            const struct cli_cfg *base, unsigned collapse, FILE *out)
{
	return cli_learn_print_profile(&t->used_read, &t->used_write, t->tty, cfg, base, collapse,
	                               out);
}
