#!/usr/bin/env bash
# Run every C test binary in $1/tests; print a total "N passed, N failed, N skipped".
set -u
build=${1:-build}
total_pass=0; total_fail=0; total_skip=0; status=0
for t in "$build"/tests/test_*; do
	[ -x "$t" ] || continue
	echo "== $(basename "$t")"
	out=$("$t" 2>&1); rc=$?
	echo "$out"
	line=$(printf '%s\n' "$out" | grep -E '^[0-9]+ passed, [0-9]+ failed, [0-9]+ skipped$' | tail -n1)
	if [ -z "$line" ]; then
		echo "   (crashed or no summary, rc=$rc)"; total_fail=$((total_fail + 1)); status=1; continue
	fi
	p=${line%% passed*}; f=${line#*, }; f=${f%% failed*}; k=${line##*, }; k=${k%% skipped*}
	total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + k))
	[ "$rc" -eq 0 ] || status=1
done
echo "C tests: $total_pass passed, $total_fail failed, $total_skip skipped"
exit $status
