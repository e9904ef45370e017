# sandlock — build, test, demo.  `make demo` and `make test` are the two
# commands README.md promises on a fresh machine (after .ci/run's packages).
CC      ?= cc
BUILD   ?= build
PYTHON  ?= /usr/bin/python3
CFLAGS  ?= -O2 -g
override CFLAGS += -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude -Isrc
LIBFLAGS = -fPIC -fvisibility=hidden
LDLIBS   = -lseccomp -lpthread
# The CLI is linked statically: a short-lived launcher otherwise spends
# ~0.4 ms of every run in the dynamic loader (libc + libseccomp).  (Not
# under the sanitizers, whose runtimes cannot be linked statically.)
CLI_STATIC ?= -static-pie

LIB_SRC  := $(sort $(wildcard src/*.c src/builtins/*.c))
LIB_OBJ  := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRC))
LIB_HDR  := $(wildcard src/*.h src/builtins/*.h)
TEST_SRC := $(sort $(wildcard tests/c/test_*.c))
TESTS    := $(patsubst tests/c/%.c,$(BUILD)/tests/%,$(TEST_SRC))
HELPER_SRC := $(sort $(wildcard tests/c/helpers/*.c))
HELPERS  := $(patsubst tests/c/helpers/%.c,$(BUILD)/helpers/%,$(HELPER_SRC))
BENCH_SRC := $(sort $(wildcard bench/*.c))
BENCHES  := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRC))

.PHONY: all lib test test-c test-py demo asan bench clean
all: lib $(BUILD)/sandlock $(TESTS) $(HELPERS) $(BENCHES)
lib: $(BUILD)/libsandlock.so $(BUILD)/libsandlock.a

$(BUILD)/obj/%.o: src/%.c $(LIB_HDR) include/sandlock.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LIBFLAGS) -c $< -o $@

$(BUILD)/libsandlock.so: $(LIB_OBJ)
	$(CC) -shared $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libsandlock.a: $(LIB_OBJ)
	ar rcs $@ $^

$(BUILD)/sandlock: $(wildcard cli/*.c) $(wildcard cli/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	$(CC) $(CFLAGS) $(LDFLAGS) $(CLI_STATIC) -o $@ $(wildcard cli/*.c) $(BUILD)/libsandlock.a $(LDLIBS)

$(BUILD)/tests/%: tests/c/%.c $(wildcard tests/c/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsandlock.a $(LDLIBS)

# Hostile helper programs run *inside* the sandbox by the tests.
$(BUILD)/helpers/%: tests/c/helpers/%.c $(wildcard tests/c/helpers/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

$(BUILD)/bench/%: bench/%.c $(wildcard bench/*.h) include/sandlock.h $(BUILD)/libsandlock.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BUILD)/libsandlock.a $(LDLIBS)

export SANDLOCK_LIB = $(abspath $(BUILD)/libsandlock.so)
export SANDLOCK_BUILD = $(abspath $(BUILD))

test: test-c test-py
test-c: all
	@tests/run_c_tests.sh $(BUILD)
test-py: all
	PYTHONPATH=python $(PYTHON) -m pytest -q tests/python

demo: all
	PYTHONPATH=python $(PYTHON) examples/demo.py

# Address/undefined-behaviour sanitizer build of the library and the C tests.
asan:
	$(MAKE) BUILD=build-asan CC=gcc CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" LDFLAGS="-fsanitize=address,undefined" CLI_STATIC= test-c

bench: all
	PYTHONPATH=python $(PYTHON) bench/run.py

clean:
	rm -rf build build-asan
