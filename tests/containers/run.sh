#!/usr/bin/env bash
# `make test-containers`: sandlock inside real containers (podman + runc).
#
# Builds a minimal image from packages at test time (busybox-static's
# /bin/busybox, the static build/sandlock, the probe helpers linked
# statically), imports it with `podman import`, and runs
# tests/containers/inside.sh in it under four configurations:
#   default     podman's own default seccomp profile
#   docker      a Docker-like profile made here from the installed one:
#               ptrace, process_vm_readv/writev and pidfd_getfd allowed only
#               with CAP_SYS_PTRACE (EPERM otherwise), as Docker's and
#               Kubernetes' RuntimeDefault
#   user        --user 1000:1000
#   readonly    --read-only with a tmpfs /tmp
# Skips (exit 0, with the reason) only when podman cannot start a
# container on this machine at all.  Leaves no image, container or file.
#
# Usage: tests/containers/run.sh [BUILD_DIR]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
tag="sandlock-ct-$$"
image="localhost/$tag:test"
work=$(mktemp -d /tmp/sandlock-ct.XXXXXX)

cleanup() {
	podman rmi -f "$image" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

skip() {
	echo "SKIP test-containers: $*"
	exit 0
}

command -v podman >/dev/null || skip "podman is not installed (apt-get install podman runc)"
runtime=$(command -v runc || true)
[ -n "$runtime" ] || runtime=/usr/sbin/runc
[ -x "$runtime" ] || skip "runc is not installed"
[ -x /bin/busybox ] || { echo "test-containers: /bin/busybox missing (busybox-static)"; exit 1; }

# ---- the image: a rootfs tarball from packages ----
root="$work/root"
mkdir -p "$root"/{bin,etc,tmp,proc,sys,dev,home/user,work}
chmod 1777 "$root/tmp" "$root/work"
chown 1000:1000 "$root/home/user"
cp /bin/busybox "$root/bin/busybox"
for a in $(/bin/busybox --list); do
	[ -e "$root/bin/$a" ] || ln -s busybox "$root/bin/$a"
done
cp "$build/sandlock" "$root/bin/sandlock"
for h in contain netprobe; do
	cc -O2 -std=c11 -D_GNU_SOURCE -static -o "$root/bin/$h" "$repo/tests/c/helpers/$h.c" \
		-lpthread 2>/dev/null
done
cp "$here/inside.sh" "$root/inside.sh"
printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/home/user:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nuser:x:1000:\n' >"$root/etc/group"
tar -C "$root" -cf "$work/rootfs.tar" .
podman import "$work/rootfs.tar" "$image" >/dev/null

# ---- the Docker-like profile, from the installed one ----
python3 - "$work/docker-like.json" <<'EOF'
import json, sys
src = "/usr/share/containers/seccomp.json"
d = json.load(open(src))
ptrace = ["pidfd_getfd", "process_vm_readv", "process_vm_writev", "ptrace"]
for rule in d["syscalls"]:
    if rule["action"] == "SCMP_ACT_ALLOW" and not rule.get("includes") and not rule.get("args"):
        rule["names"] = [n for n in rule["names"] if n not in ptrace]
d["syscalls"].append({"names": ptrace, "action": "SCMP_ACT_ALLOW",
                      "includes": {"caps": ["CAP_SYS_PTRACE"]}, "excludes": {}})
d["syscalls"].append({"names": ptrace, "action": "SCMP_ACT_ERRNO", "errnoRet": 1,
                      "includes": {}, "excludes": {"caps": ["CAP_SYS_PTRACE"]}})
json.dump(d, open(sys.argv[1], "w"))
EOF

# Limits no higher than ours (runc must be able to set them), and low
# enough to be the "low RLIMIT_NOFILE" case.
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 1024 ] && nofile=1024
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 4096 ] && nproc=4096
podman_run=(podman --cgroup-manager cgroupfs run --rm --runtime "$runtime" --network none
	--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")

out=$("${podman_run[@]}" "$image" /bin/true 2>&1) ||
	skip "podman cannot start a container here: $(echo "$out" | tail -n1)"

status=0
run_config() {
	local name=$1
	shift
	echo "== $name"
	if "${podman_run[@]}" -e CT_CONFIG="$name" "$@" "$image" /bin/sh /inside.sh; then
		echo "== $name: passed"
	else
		echo "== $name: FAILED"
		status=1
	fi
}
run_config default
run_config docker --security-opt "seccomp=$work/docker-like.json"
run_config user --user 1000:1000
run_config readonly --read-only --tmpfs /tmp:rw,mode=1777 --tmpfs /work:rw,mode=1777
[ $status -eq 0 ] && echo "test-containers: all configurations passed"
exit $status
