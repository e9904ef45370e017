#!/usr/bin/env bash
# make test-unpriv: the C and Python suites again as an unprivileged user.
# Most people run sandlock without root: no cgroups (max_memory becomes a
# per-process limit, no kill-switch group), no capabilities, files they
# cannot read unless they own them.  `make test` as root does not see
# those paths; this does.  As a non-root user `make test` already is this
# run, so it says so and stops.
#
# The tree is copied (without .git) to a scratch directory the user owns:
# a checkout under /root is not readable by anyone else, and the suites
# write next to themselves (bytecode, helpers).  Removed at the end.
set -euo pipefail
BUILD=${1:-build}
USER_NAME=sandlock-test

if [ "$(id -u)" != 0 ]; then
	echo "test-unpriv: already unprivileged (uid $(id -u)): make test is this run"
	exit 0
fi
id -u "$USER_NAME" >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin "$USER_NAME"

scratch=$(mktemp -d /tmp/sandlock-unpriv.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
tar -C . --exclude=./.git -cf - . | tar -C "$scratch" -xf -
mkdir -p "$scratch/.home"
chown -R "$USER_NAME:" "$scratch"
chmod 755 "$scratch"

as_user() {
	runuser -u "$USER_NAME" -- env -i PATH=/usr/local/bin:/usr/bin:/bin \
		HOME="$scratch/.home" TMPDIR=/tmp LANG=C.UTF-8 "$@"
}
cd "$scratch"
as_user tests/run_c_tests.sh "$BUILD"
as_user env PYTHONPATH=python SANDLOCK_LIB="$scratch/$BUILD/libsandlock.so" \
	SANDLOCK_BUILD="$scratch/$BUILD" /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/python
