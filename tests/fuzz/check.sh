#!/bin/bash
# Fuzz the broker's parsers with libFuzzer (clang, ASan, UBSan), each
# target for SBX_FUZZ_SECONDS (default 30) from the seed corpus in
# tests/fuzz/corpus/TARGET. Found inputs stay in the working corpus, never
# in the repository; a crash leaves its input in the build directory and is
# named on stderr. The last line is "fuzz: N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
secs=${SBX_FUZZ_SECONDS:-30}
case $secs in ''|*[!0-9]*|0) echo "fuzz: usage: SBX_FUZZ_SECONDS must be a positive integer" >&2; exit 100 ;; esac
CC=${SBX_FUZZ_CC:-clang-14}
out=${SBX_OBJDIR:-}
if [ -n "$out" ]; then out=$out/fuzz; else out=$(mktemp -d /tmp/sbx-fuzz.XXXXXX); fi
mkdir -p "$out"
passed=0 failed=0

# target: the lib files it is linked with (and libraries, after them).
# The parsers are compiled directly with clang and glibc, never musl.
declare -A SRC=(
	[http1]="lib/net/http1.c lib/net/hostpat.c lib/parse.c lib/die.c lib/quote.c lib/status.c lib/json.c lib/grow.c lib/fd.c lib/clock.c"
	[tlshello]="lib/net/tlshello.c lib/net/hostpat.c"
	[hostpat]="lib/net/hostpat.c"
	[dns]="lib/net/dns.c"
	[policy]="lib/policy/policy.c lib/policy/policy_json.c lib/policy/policy_file.c lib/net/hostpat.c lib/json.c lib/grow.c lib/die.c lib/quote.c lib/err.c lib/status.c lib/clock.c lib/fd.c lib/parse.c -ljansson"
)

for f in tests/fuzz/fuzz_*.c; do
	t=${f#tests/fuzz/fuzz_}
	t=${t%.c}
	if [ -z "${SRC[$t]:-}" ]; then
		echo "fuzz: $t: no source list in tests/fuzz/check.sh" >&2
		failed=$((failed + 1))
		continue
	fi
	bin=$out/fuzz_$t
	# shellcheck disable=SC2086
	if ! "$CC" -g -O1 -std=gnu11 -D_GNU_SOURCE -Ilib -Ilib/net -Ilib/policy -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -o "$bin" "tests/fuzz/fuzz_$t.c" ${SRC[$t]} 2>"$out/$t.build.log"; then
		echo "fuzz: $t: build failed (log: $out/$t.build.log)" >&2
		failed=$((failed + 1))
		continue
	fi
	work=$out/corpus-$t
	mkdir -p "$work"
	cp -n tests/fuzz/corpus/$t/* "$work/" 2>/dev/null || :
	if (cd "$out" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
		-artifact_prefix="$out/$t-" "$work" >"$out/$t.log" 2>&1); then
		echo "fuzz: $t: ok ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t.log" | grep -o '[0-9]*$') runs in ${secs}s)"
		passed=$((passed + 1))
	else
		echo "fuzz: $t: FAILED (log: $out/$t.log)" >&2
		grep -E '^(==|SUMMARY|.*runtime error)' "$out/$t.log" | head -5 >&2
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
