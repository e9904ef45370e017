/*
 * runctl.c — what a caller does to a running sandbox through its handle
 * (run/handle.h): its pids and remapped ports, whether it runs, pause and
 * resume (the run's v2 group frozen, else signals to the tree: pause.c),
 * CPU time and memory (usage.c), its stdio pipes; and the CPU throttle
 * (throttle.c) that the run loop ticks.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include "net/portmap.h"
#include "run/handle.h"
#include "run/pause.h"
#include "run/usage.h"
#include "supervisor/services.h"
#include "supervisor/supervisor.h"

/* pause waits at most this long for a just-released command to exec. */
#define SL_EXEC_WAIT_MS 2000

SL_EXPORT int32_t sandlock_handle_pid(const sandlock_handle_t *h)
{
	return h ? (int32_t)h->L.cmd_pid : 0; /* the reference's "not available" */
}

SL_EXPORT int sandlock_handle_ports(sandlock_handle_t *h, uint16_t *virt, uint16_t *real,
                                   size_t max)
{
	if (!h)
		return -1;
	struct sl_portmap *m = h->sup ? sl_supervisor_services(h->sup)->ports : NULL;
	if (!m || ((!virt || !real) && max))
		return m ? -1 : 0;
	return (int)sl_portmap_remapped(m, virt, real, max);
}

SL_EXPORT int sandlock_handle_init_pid(const sandlock_handle_t *h)
{
	return h ? (int)h->L.pid : -1;
}

/* Is init alive and signalable?  Caller holds mu. */
bool sl_handle_signalable(const sandlock_handle_t *h)
{
	return !h->reaping && !h->finished && !sl_child_exited(h->L.pid);
}

SL_EXPORT bool sandlock_handle_is_running(sandlock_handle_t *h)
{
	if (!h)
		return false;
	handle_lock(h);
	bool running = sl_handle_signalable(h);
	handle_unlock(h);
	return running;
}

/*
 * A command stopped between its release and its execve would keep init
 * suspended in vfork, unable to end the sandbox when asked.  So pause
 * only once the command has exec'd: the sync socket hangs up then (its
 * last copies, the command's and init's, are closed by exec and right
 * after vfork).  Bounded: a wedged start is paused anyway.
 */
static bool exec_seen(sandlock_handle_t *h, int64_t wait_ms)
{
	if (h->exec_fd < 0)
		return true;
	struct pollfd pf = { h->exec_fd, POLLRDHUP, 0 };
	int64_t stop = sl_now_ms() + wait_ms;
	for (;;) {
		int left = (int)(stop - sl_now_ms());
		int pr = poll(&pf, 1, left > 0 ? left : 0);
		if (pr > 0 && (pf.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
			close(h->exec_fd); /* answered for good */
			h->exec_fd = -1;
			return true;
		}
		if (pr == 0 || (pr < 0 && errno != EINTR))
			return false;
	}
}

static void wait_exec(sandlock_handle_t *h)
{
	(void)exec_seen(h, SL_EXEC_WAIT_MS);
}

int64_t sl_handle_throttle_wait_ms(void *arg)
{
	sandlock_handle_t *h = arg;
	return sl_throttle_wait_ms(&h->thr);
}

/* Under mu, like every signal to the tree, and only once the command has
 * exec'd (for the reason above): until then the throttle starts afresh. */
void sl_handle_throttle_tick(void *arg)
{
	sandlock_handle_t *h = arg;
	if (!h->thr.pct || sl_throttle_wait_ms(&h->thr) > 0)
		return;
	handle_lock(h);
	if (!exec_seen(h, 0))
		sl_throttle_init(&h->thr, h->thr.pct, h->thr.init, h->thr.cg_dirfd);
	else if (!h->reaping)
		sl_throttle_tick(&h->thr, h->paused);
	handle_unlock(h);
}

/*
 * Pause: the run's v2 group frozen where it has one (cgroup.c; init is
 * frozen too, see thaw_locked), else every descendant of init SIGSTOPped
 * (pause.c).  Under mu.
 */
static int pause_locked(sandlock_handle_t *h)
{
	if (h->frozen)
		return 0;
	/* Not before the release: a frozen init could not wake from vfork. */
	if (sl_pause_freezer && h->state == H_RUNNING && sl_cgroup_freeze(&h->cg, true) == 0) {
		h->frozen = true;
		return 0;
	}
	return sl_pause_tree(h->L.pid, true);
}

/*
 * Resume.  The throttle may still hold the tree SIGSTOPped: then it
 * continues it at its time; a throttle that let go while the sandbox was
 * paused left its stop in place (throttle.c never continues a paused
 * sandbox), so the thaw sends that SIGCONT.  Under mu.
 */
static int resume_locked(sandlock_handle_t *h)
{
	if (h->frozen) {
		if (sl_cgroup_freeze(&h->cg, false) < 0)
			return -1;
		h->frozen = false;
		return h->thr.pct && !h->thr.stopped ? sl_pause_tree(h->L.pid, false) : 0;
	}
	if (h->thr.stopped)
		return 0; /* the throttle holds it stopped and continues it at its time */
	return sl_pause_tree(h->L.pid, false);
}

/* Before ending a frozen sandbox: init must run to end its tree (and a
 * timeout to be noticed), so the group is thawed first.  Under mu. */
void sl_handle_thaw_locked(sandlock_handle_t *h)
{
	if (h->frozen && sl_cgroup_freeze(&h->cg, false) == 0)
		h->frozen = false;
}

void sl_handle_thaw_for_end(void *arg)
{
	sandlock_handle_t *h = arg;
	handle_lock(h);
	sl_handle_thaw_locked(h);
	handle_unlock(h);
}

static int tree_signal(sandlock_handle_t *h, bool stop)
{
	if (!h) {
		errno = EINVAL;
		return -1;
	}
	handle_lock(h);
	int rc = -1;
	if (stop && h->state == H_RUNNING)
		wait_exec(h);
	if (!sl_handle_signalable(h))
		errno = ESRCH;
	else
		rc = stop ? pause_locked(h) : resume_locked(h);
	if (rc == 0)
		h->paused = stop;
	handle_unlock(h);
	return rc;
}

/* A reading of the running sandbox, under mu: init's pid names it. */
static int64_t usage(sandlock_handle_t *h, bool cpu)
{
	if (!h) {
		errno = EINVAL;
		return -1;
	}
	handle_lock(h);
	int64_t v = -1;
	errno = 0;
	if (h->state != H_RUNNING || !sl_handle_signalable(h))
		errno = ESRCH;
	else if (cpu)
		v = sl_usage_cpu_ns(h->L.pid, h->cg.dirfd);
	else
		v = sl_usage_memory_bytes(h->L.pid, h->L.cg.mem_dir);
	if (v < 0 && errno == 0)
		errno = EIO;
	handle_unlock(h);
	return v;
}

SL_EXPORT int64_t sandlock_handle_cpu_time_ns(sandlock_handle_t *h)
{
	return usage(h, true);
}

SL_EXPORT int64_t sandlock_handle_memory_bytes(sandlock_handle_t *h)
{
	return usage(h, false);
}

SL_EXPORT int sandlock_handle_pause(sandlock_handle_t *h)
{
	return tree_signal(h, true);
}

SL_EXPORT int sandlock_handle_resume(sandlock_handle_t *h)
{
	return tree_signal(h, false);
}

static int take_fd(sandlock_handle_t *h, int i)
{
	if (!h)
		return -1;
	handle_lock(h);
	int fd = h->L.pipe_fd[i];
	h->L.pipe_fd[i] = -1;
	handle_unlock(h);
	return fd;
}

SL_EXPORT int sandlock_handle_stdin_fd(sandlock_handle_t *h)
{
	return take_fd(h, 0);
}

SL_EXPORT int sandlock_handle_stdout_fd(sandlock_handle_t *h)
{
	return take_fd(h, 1);
}

SL_EXPORT int sandlock_handle_stderr_fd(sandlock_handle_t *h)
{
	return take_fd(h, 2);
}
