# sandlock — build, test, demo.  `make demo` and `make test` are the two
# commands README.md promises on a fresh machine (after .ci/run's packages).
CC      ?= cc
BUILD   ?= build
PYTHON  ?= /usr/bin/python3
CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc
LIBFLAGS = -fPIC -fvisibility=hidden
LDLIBS   = -lseccomp -lpthread -lhttp_parser -lssl -lcrypto -ljansson
# The CLI is linked statically: a short-lived launcher otherwise spends
# ~0.4 ms of every run in the dynamic loader (libc + libseccomp).  (Not
# under the sanitizers, whose runtimes cannot be linked statically.)
CLI_STATIC ?= -static-pie

# The version has one source: SANDLOCK_VERSION in include/sandlock.h.  The
# SONAME carries its major number (1 since the reference-compatible ABI).
VERSION  := $(shell sed -n 's/^\#define SANDLOCK_VERSION "\(.*\)"/\1/p' include/sandlock.h)
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))
SONAME   := libsandlock.so.$(SOMAJOR)

# Install locations (GNU conventions); DESTDIR is prepended to each.
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BASHCOMPDIR  ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR   ?= $(PREFIX)/share/zsh/site-functions
DATADIR      ?= $(PREFIX)/share
# The directories install fills, and the list of those it had to make
# (without DESTDIR), so that uninstall removes exactly those, when empty.
INSTALL_DIRS = $(BINDIR) $(LIBDIR) $(INCLUDEDIR) $(PKGCONFIGDIR) $(MANDIR)/man1 \
	$(MANDIR)/man3 $(BASHCOMPDIR) $(ZSHCOMPDIR) $(DATADIR)/sandlock
MADE_DIRS = $(DATADIR)/sandlock/installed-dirs
INSTALL    ?= install

# The library's sources live in sub-system folders (docs/architecture.md);
# every #include names its header by its path under src/.
LIB_SRC  := $(sort $(shell find src -name '*.c'))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
LIB_HDR  := $(shell find src -name '*.h')
TEST_SRC := $(sort $(wildcard tests/c/test_*.c))
TESTS    := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(TEST_SRC))
HELPER_SRC := $(sort $(wildcard tests/c/helpers/*.c))
HELPERS  := $(patsubst tests/c/helpers/%.c,$(BUILD)/helpers/%,$(HELPER_SRC)) \
            $(BUILD)/helpers/execprobe-static $(BUILD)/helpers/xattrprobe-static \
            $(BUILD)/helpers/oci-probe
# A static musl program (resolve-musl: musl's own resolver) where musl-gcc
# is installed (musl-tools); the tests that need it say so when it is not.
MUSL_CC  := $(shell command -v musl-gcc 2>/dev/null)
HELPERS  += $(if $(MUSL_CC),$(BUILD)/helpers/resolve-musl)
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all lib typecheck test test-c test-py test-go test-oci test-workloads test-containers test-unpriv demo asan bench clean install uninstall
all: lib $(BUILD)/sandlock $(BUILD)/sandlock-oci $(TESTS) $(HELPERS) $(BENCHES)
lib: $(BUILD)/libsandlock.so $(BUILD)/libsandlock.a

$(BUILD)/obj/%.o: src/%.c $(LIB_HDR) include/sandlock.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) -c $< -o $@

$(BUILD)/libsandlock.so: $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Recreated, not updated: "ar r" would keep the objects of removed sources.
$(BUILD)/libsandlock.a: $(LIB_OBJ)
	rm -f $@
	ar rcs $@ $^

$(BUILD)/sandlock: $(wildcard cli/*.c) $(wildcard cli/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(CLI_STATIC) -o $@ $(wildcard cli/*.c) $(BUILD)/libsandlock.a $(LDLIBS) -lm

# The OCI runtime (docs/oci.md): a second command over the library
# (cli/signals.c: dying of the container's signal, as the CLI does).
OCI_SRC := $(sort $(wildcard cli/oci/*.c)) cli/signals.c
$(BUILD)/sandlock-oci: $(OCI_SRC) $(wildcard cli/oci/*.h) cli/signals.h include/sandlock.h $(BUILD)/libsandlock.a
	$(CC) $(CFLAGS) -Icli $(LDFLAGS) $(CLI_STATIC) -o $@ $(OCI_SRC) $(BUILD)/libsandlock.a $(LDLIBS)

$(BUILD)/tests/%: tests/c/%.c $(wildcard tests/c/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsandlock.a $(LDLIBS)

# Hostile helper programs run *inside* the sandbox by the tests.
$(BUILD)/helpers/%: tests/c/helpers/%.c $(wildcard tests/c/helpers/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

# Static copies for the chroot tests: they run in a rootfs without the
# host's libraries (no sanitizers: their runtimes do not link statically).
$(BUILD)/helpers/%-static: tests/c/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -static -o $@ $<

$(BUILD)/helpers/resolve-musl: tests/c/helpers/resolve.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -O2 -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -static -o $@ $<

# The probe inside test_oci.py's container image (static: the image has
# no libraries).
$(BUILD)/helpers/oci-probe: tests/oci/probe.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -static -o $@ $<

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsandlock.a $(LDLIBS)

export SANDLOCK_LIB = $(abspath $(BUILD)/libsandlock.so)
export SANDLOCK_BUILD = $(abspath $(BUILD))

test: typecheck test-c test-py test-go
# mypy --strict on the whole Python package (python/mypy.ini; a new error
# fails the build); skipped if mypy is absent.
typecheck:
	@if $(PYTHON) -m mypy --version >/dev/null 2>&1; then \
	    cd python && $(PYTHON) -m mypy --config-file mypy.ini; \
	else echo "typecheck: skipped (mypy is not installed: apt-get install python3-mypy)"; fi
test-c: all
	@tests/run_c_tests.sh $(BUILD)
test-py: all
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python

# The Go SDK (go/): cgo over build/libsandlock.a; no module downloads.
test-go: lib
	@if command -v go >/dev/null; then \
	    cd go && GOFLAGS=-mod=mod go vet ./... && GOFLAGS=-mod=mod go test -count=1 ./...; \
	else echo "test-go: skipped (go is not installed: apt-get install golang-go)"; fi

# The OCI runtime through podman (its own target: it starts containers).
test-oci: all
	$(PYTHON) -m pytest -q tests/oci

# Real programs (make/cc, pytest, pip, npm, node, go, curl, git, redis,
# postgresql, bash) bare vs sandboxed vs in a COW workdir, results compared
# (tests/workloads/, docs/workloads.md).  Heavy: not part of `make test`.
test-workloads: all
	$(PYTHON) -m pytest -q tests/workloads

# sandlock inside real containers (podman + runc, four configurations:
# docs/containers.md); skips only where podman cannot start a container.
test-containers: all
	@tests/containers/run.sh $(BUILD)

# The C and Python suites as an unprivileged user (no cgroups, no
# capabilities): how most people run sandlock.  Run by root (CI), it makes
# a system user and a scratch copy of the tree (tests/run_unpriv.sh).
test-unpriv: all
	@tests/run_unpriv.sh $(BUILD)

demo: all
	PYTHONPATH=python $(PYTHON) examples/demo.py

# Address/undefined-behaviour sanitizer build of the library, the C tests
# and then the Python suite on that library.  Python itself is not built
# with ASan, so its runtimes must come first in the process: they are
# preloaded into the interpreter (conftest.py takes LD_PRELOAD out of the
# environment again, so sandboxed commands do not load them; the tests
# that start a Python importing sandlock give it them back, conftest's
# asan_host, and build C programs against the library with the sanitizer).
# Python's own leaks are not ours: no leak check.
# A crash the tests cause on purpose (a clone's SIGSEGV) is the process's
# own: ASan's handler would report it instead (handle_segv=0).
ASAN_FLAGS = BUILD=build-asan CC=gcc CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" LDFLAGS="-fsanitize=address,undefined" CLI_STATIC=
asan:
	$(MAKE) $(ASAN_FLAGS) test-c
	ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:handle_segv=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
	SANDLOCK_LIB=$(abspath build-asan/libsandlock.so) SANDLOCK_BUILD=$(abspath build-asan) \
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python

bench: all
	PYTHONPATH=python $(PYTHON) bench/run.py

# libsandlock.so.X.Y.Z is the file; .so.X (the SONAME, what programs load)
# and .so (what the linker finds for -lsandlock) are symlinks to it.
# sandlock.pc is generated here, not at build time, so that it names the
# PREFIX/LIBDIR of this install even if `make` ran with other values.
install: lib $(BUILD)/sandlock $(BUILD)/sandlock-oci
	@{ cat "$(DESTDIR)$(MADE_DIRS)" 2>/dev/null; \
	   for d in $(INSTALL_DIRS); do p="$(DESTDIR)$$d"; \
	     while [ -n "$${p#$(DESTDIR)}" ] && [ ! -d "$$p" ]; do echo "$${p#$(DESTDIR)}"; p="$${p%/*}"; done; \
	   done; } | sort -u > $(BUILD)/installed-dirs
	$(INSTALL) -d $(addprefix $(DESTDIR),$(INSTALL_DIRS))
	$(INSTALL) -m 644 $(BUILD)/installed-dirs $(DESTDIR)$(MADE_DIRS)
	$(INSTALL) -m 755 $(BUILD)/sandlock $(DESTDIR)$(BINDIR)/sandlock
	$(INSTALL) -m 755 $(BUILD)/sandlock-oci $(DESTDIR)$(BINDIR)/sandlock-oci
	$(INSTALL) -m 755 $(BUILD)/libsandlock.so $(DESTDIR)$(LIBDIR)/libsandlock.so.$(VERSION)
	ln -sf libsandlock.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsandlock.so
	$(INSTALL) -m 644 $(BUILD)/libsandlock.a $(DESTDIR)$(LIBDIR)/libsandlock.a
	$(INSTALL) -m 644 include/sandlock.h $(DESTDIR)$(INCLUDEDIR)/sandlock.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
	    sandlock.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/sandlock.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/sandlock.pc
	sed 's|@VERSION@|$(VERSION)|g' man/sandlock.1 > $(DESTDIR)$(MANDIR)/man1/sandlock.1
	sed 's|@VERSION@|$(VERSION)|g' man/sandlock.3 > $(DESTDIR)$(MANDIR)/man3/sandlock.3
	chmod 644 $(DESTDIR)$(MANDIR)/man1/sandlock.1 $(DESTDIR)$(MANDIR)/man3/sandlock.3
	$(INSTALL) -m 644 completions/sandlock.bash $(DESTDIR)$(BASHCOMPDIR)/sandlock
	$(INSTALL) -m 644 completions/_sandlock $(DESTDIR)$(ZSHCOMPDIR)/_sandlock
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then ldconfig || true; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sandlock $(DESTDIR)$(BINDIR)/sandlock-oci \
	    $(DESTDIR)$(LIBDIR)/libsandlock.so.$(VERSION) $(DESTDIR)$(LIBDIR)/$(SONAME) \
	    $(DESTDIR)$(LIBDIR)/libsandlock.so $(DESTDIR)$(LIBDIR)/libsandlock.a \
	    $(DESTDIR)$(INCLUDEDIR)/sandlock.h $(DESTDIR)$(PKGCONFIGDIR)/sandlock.pc \
	    $(DESTDIR)$(MANDIR)/man1/sandlock.1 $(DESTDIR)$(MANDIR)/man3/sandlock.3 \
	    $(DESTDIR)$(BASHCOMPDIR)/sandlock $(DESTDIR)$(ZSHCOMPDIR)/_sandlock
	@# the directories install made, deepest first, if nothing else is in them
	@if [ -f "$(DESTDIR)$(MADE_DIRS)" ]; then dirs=$$(sort -r "$(DESTDIR)$(MADE_DIRS)"); \
	    rm -f "$(DESTDIR)$(MADE_DIRS)"; \
	    for d in $$dirs; do rmdir "$(DESTDIR)$$d" 2>/dev/null || true; done; fi
	@if [ -z "$(DESTDIR)" ] && command -v ldconfig >/dev/null; then ldconfig || true; fi

clean:
	rm -rf build build-asan build-dev
