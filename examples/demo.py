"""sandlock demo: audit the paths a command opens, then deny one.

Run with `make demo` (PYTHONPATH=python /usr/bin/python3 examples/demo.py).
"""
import sandlock
from sandlock.presets import COMMON_PATH_SYSCALLS, AuditPathsHandler, PathDenyHandler

SYSTEM = ["/usr", "/lib", "/lib64", "/bin", "/etc"]


def show(title, result):
    print("== %s: reason=%s exit_code=%d" % (title, result.reason, result.exit_code))
    if result.stdout:
        print("   stdout: %s" % result.stdout.decode(errors="replace").strip())
    if result.stderr:
        print("   stderr: %s" % result.stderr.decode(errors="replace").strip())


def main():
    # clean_env with LANG=C: cat does not probe a dozen locale files.
    sb = sandlock.Sandbox(fs_readable=SYSTEM, clean_env=True, env={"LANG": "C"}, timeout=10)
    cmd = ["/bin/cat", "/etc/hostname"]

    def show_path(path, ctx):
        if path:  # "" is fstat (newfstatat(fd, "", AT_EMPTY_PATH))
            print("   audit: pid %d %-10s %s" % (ctx.pid, ctx.syscall_name, path))

    audit = AuditPathsHandler(callback=show_path)
    print("== audit every path syscall of %s" % " ".join(cmd))
    show("audited", sb.run_with_handlers(cmd, [(s, audit) for s in COMMON_PATH_SYSCALLS]))

    deny = PathDenyHandler(deny=["/etc/hostname"])
    show("deny /etc/hostname", sb.run_with_handlers(cmd, [(s, deny) for s in COMMON_PATH_SYSCALLS]))

    # Without any handler, Landlock alone: /etc is not readable at all.
    no_etc = sandlock.Sandbox(fs_readable=["/usr", "/lib", "/lib64", "/bin"], timeout=10)
    show("Landlock without /etc", no_etc.run(cmd))


if __name__ == "__main__":
    main()
