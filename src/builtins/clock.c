/*
 * clock.c — time_start: the wall clock of the sandbox starts at a fixed
 * epoch and advances at real speed.
 *
 * WHY: reproducible runs need the same dates on every run (build stamps,
 * log lines, certificates' "now").  CLOCK_REALTIME-based reads are
 * answered here: clock_gettime for CLOCK_REALTIME, _COARSE, _ALARM and
 * CLOCK_TAI, gettimeofday and time report
 *     time_start + (now - the run's start)
 * written into the caller's buffers.  Every other clock (MONOTONIC,
 * BOOTTIME, CPU clocks) continues to the kernel untouched, so timers,
 * sleeps and timeouts keep working.
 *
 * THE vDSO: those calls normally never enter the kernel: libc calls the
 * vDSO, code the kernel maps into every process.  So once per exec'd
 * program, at its first arch_prctl(ARCH_SET_FS) (every libc and the Go
 * runtime set up TLS with it before main, before any clock read), the
 * vDSO's clock_gettime, gettimeofday and time entry points are
 * overwritten, through /proc/PID/mem (a private copy-on-write of those
 * pages), with a three-instruction stub that makes the real syscall, which
 * the filter traps.  Forked children inherit the patched copy.  Only
 * x86_64 has the stubs; elsewhere time_start is refused at build time
 * rather than silently ignored.
 *
 * Limits (documented in README): file timestamps (stat) are real; absolute
 * CLOCK_REALTIME timers (timer_settime, timerfd) fire at real times; a
 * statically linked program that never calls arch_prctl keeps the real
 * vDSO.  Trapping clock_gettime costs a notification per call, also for
 * the clocks that are passed through.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "builtins/builtin.h"

#ifndef ARCH_SET_FS
#define ARCH_SET_FS 0x1002
#endif
#define VDSO_MAX_IMAGE (64u << 10)

struct clock_state {
	int64_t offset_ns; /* virtual realtime - real realtime */
};

static int64_t ns_of(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static bool is_realtime_clock(uint64_t clk)
{
	return clk == CLOCK_REALTIME || clk == CLOCK_REALTIME_COARSE || clk == CLOCK_TAI ||
	       clk == CLOCK_REALTIME_ALARM;
}

/* ---------------- the vDSO patch (x86_64) ---------------- */

#ifdef __x86_64__
/* mov eax, NR; syscall; ret */
#define STUB(nr) { 0xb8, (nr) & 0xff, ((nr) >> 8) & 0xff, 0, 0, 0x0f, 0x05, 0xc3 }
static const struct {
	const char *name;
	uint8_t code[8];
} k_stubs[] = {
	{ "__vdso_clock_gettime", STUB(__NR_clock_gettime) },
	{ "__vdso_gettimeofday", STUB(__NR_gettimeofday) },
	{ "__vdso_time", STUB(__NR_time) },
};
#define N_STUBS (sizeof(k_stubs) / sizeof(k_stubs[0]))

/* The caller's AT_SYSINFO_EHDR (the vDSO's address), or 0. */
static uint64_t vdso_base(const struct sl_call *call)
{
	int dir = sl_child_procdir(call->listener, call->n);
	if (dir < 0)
		return 0;
	int fd = openat(dir, "auxv", O_RDONLY | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return 0;
	uint64_t av[2], base = 0;
	while (read(fd, av, sizeof av) == (ssize_t)sizeof av && av[0] != AT_NULL)
		if (av[0] == AT_SYSINFO_EHDR)
			base = av[1];
	close(fd);
	return base;
}

static bool read_child(const struct sl_call *call, uint64_t addr, void *buf, size_t n)
{
	return sandlock_mem_peek(call->mem, addr, buf, n) == 0;
}

/* The whole vDSO image (it is mapped from its start, sections included). */
static uint8_t *read_image(const struct sl_call *call, uint64_t base, size_t *len)
{
	Elf64_Ehdr eh;
	if (!read_child(call, base, &eh, sizeof eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
		return NULL;
	uint64_t end = eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr);
	if (eh.e_shnum == 0 || end > VDSO_MAX_IMAGE)
		return NULL;
	uint8_t *img = malloc(end);
	if (img && !read_child(call, base, img, end)) {
		free(img);
		img = NULL;
	}
	*len = end;
	return img;
}

/* The section of the given type, bounds-checked against the image. */
static const Elf64_Shdr *find_section(const uint8_t *img, size_t len, uint32_t type)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sh = (const Elf64_Shdr *)(img + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++)
		if (sh[i].sh_type == type && sh[i].sh_offset + sh[i].sh_size <= len &&
		    sh[i].sh_link < eh->e_shnum)
			return &sh[i];
	return NULL;
}

/* Write each stub over its symbol; true if clock_gettime was patched. */
static bool patch_symbols(const struct sl_call *call, uint64_t base, const uint8_t *img,
                          size_t len)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)img;
	const Elf64_Shdr *sym = find_section(img, len, SHT_DYNSYM);
	if (!sym)
		return false;
	const Elf64_Shdr *str = (const Elf64_Shdr *)(img + eh->e_shoff) + sym->sh_link;
	if (str->sh_offset + str->sh_size > len || str->sh_size == 0)
		return false;
	const char *names = (const char *)img + str->sh_offset;
	if (names[str->sh_size - 1] != '\0')
		return false; /* every name below is then NUL-terminated */
	const Elf64_Sym *syms = (const Elf64_Sym *)(img + sym->sh_offset);
	bool patched = false;
	for (size_t i = 0; i < sym->sh_size / sizeof(Elf64_Sym); i++) {
		if (syms[i].st_name >= str->sh_size || syms[i].st_size < sizeof k_stubs[0].code ||
		    syms[i].st_value + syms[i].st_size > len)
			continue;
		const char *nm = names + syms[i].st_name;
		for (size_t k = 0; k < N_STUBS; k++) {
			if (strcmp(nm, k_stubs[k].name) != 0)
				continue;
			if (sandlock_mem_poke(call->mem, base + syms[i].st_value, k_stubs[k].code,
			                       sizeof k_stubs[k].code) == 0 && k == 0)
				patched = true;
		}
	}
	return patched;
}

/* Make the caller's vDSO clock entries real syscalls.  Without a vDSO
 * (vdso=0) there is nothing to do. */
static void patch_vdso(const struct sl_call *call)
{
	uint64_t base = vdso_base(call);
	size_t len = 0;
	uint8_t *img = base ? read_image(call, base, &len) : NULL;
	if (img && !patch_symbols(call, base, img, len))
		sl_warn("time_start: could not patch the vDSO of pid %u", call->n->pid);
	free(img);
}

static bool vdso_supported(void)
{
	return true;
}
#else
static void patch_vdso(const struct sl_call *call)
{
	(void)call;
}

static bool vdso_supported(void)
{
	return false;
}
#endif

/* ---------------- answering the clock reads ---------------- */

static bool now_virtual(const struct clock_state *s, uint64_t clk, struct timespec *out)
{
	if (clock_gettime((clockid_t)clk, out) < 0)
		return false;
	int64_t v = ns_of(out) + s->offset_ns;
	out->tv_sec = v / 1000000000;
	out->tv_nsec = v % 1000000000;
	return true;
}

/* Write n bytes to the caller at addr (0 = the caller passed NULL). */
static bool put(const struct sl_call *call, uint64_t addr, const void *p, size_t n)
{
	return addr == 0 || sandlock_mem_poke(call->mem, addr, p, n) == 0;
}

static bool answer_clock_gettime(const struct clock_state *s, const struct sl_call *call,
                                 sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	struct timespec ts;
	if (!is_realtime_clock(a[0]))
		return false; /* MONOTONIC & co: the kernel's own answer */
	if (!now_virtual(s, a[0], &ts))
		sandlock_action_set_errno(act, EINVAL);
	else if (a[1] == 0 || !put(call, a[1], &ts, sizeof ts))
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, 0);
	return true;
}

static bool answer_gettimeofday(const struct clock_state *s, const struct sl_call *call,
                                sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	struct timespec ts;
	now_virtual(s, CLOCK_REALTIME, &ts);
	struct { int64_t sec, usec; } tv = { ts.tv_sec, ts.tv_nsec / 1000 };
	struct { int32_t minuteswest, dsttime; } tz = { 0, 0 }; /* obsolete: UTC */
	if (!put(call, a[0], &tv, sizeof tv) || !put(call, a[1], &tz, sizeof tz))
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, 0);
	return true;
}

static bool answer_time(const struct clock_state *s, const struct sl_call *call,
                        sandlock_action_t *act)
{
	struct timespec ts;
	now_virtual(s, CLOCK_REALTIME, &ts);
	int64_t t = ts.tv_sec;
	if (!put(call, call->n->args[0], &t, sizeof t))
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, t);
	return true;
}

static bool clock_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct clock_state *s = state;
	switch (call->n->syscall_nr) {
	case __NR_clock_gettime:
		return answer_clock_gettime(s, call, act);
	case __NR_gettimeofday:
		return answer_gettimeofday(s, call, act);
#ifdef __NR_time
	case __NR_time:
		return answer_time(s, call, act);
#endif
#ifdef __NR_arch_prctl
	case __NR_arch_prctl:
		if (call->n->args[0] == ARCH_SET_FS)
			patch_vdso(call);
		return false; /* the call itself proceeds */
#endif
	default:
		return false;
	}
}

/* ---------------- registration ---------------- */

static int clock_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	static const int nrs[] = {
		__NR_clock_gettime, __NR_gettimeofday,
#ifdef __NR_time
		__NR_time,
#endif
#ifdef __NR_arch_prctl
		__NR_arch_prctl,
#endif
	};
	if (!cfg->has_time_start)
		return 0;
	return sl_traps_add_all(out, nrs, sizeof nrs / sizeof nrs[0]);
}

static int clock_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                      char **msg)
{
	(void)sv;
	if (!cfg->has_time_start)
		return 0;
	if (!vdso_supported()) {
		*msg = sl_strdup("time_start is only supported on x86_64");
		return -1;
	}
	struct clock_state *s = calloc(1, sizeof(*s));
	struct timespec now;
	if (!s || clock_gettime(CLOCK_REALTIME, &now) < 0) {
		free(s);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->offset_ns = cfg->time_start_ns - ns_of(&now);
	*state = s;
	return 0;
}

const struct sl_builtin sl_builtin_clock = {
	.name = "time start",
	.setting = "time_start (the clock is shifted by the supervisor)",
	.phase = SL_PHASE_FIRST,
	.syscalls = clock_syscalls,
	.init = clock_init,
	.free = free,
	.decide = clock_decide,
};
