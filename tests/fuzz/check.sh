#!/bin/bash
# Fuzz the broker's parsers with libFuzzer (clang, ASan, UBSan), each
# target for SBX_FUZZ_SECONDS (default 30) from the seed corpus in
# tests/fuzz/corpus/TARGET, SBX_FUZZ_JOBS targets (default: one per core)
# at a time. Found inputs stay in the working corpus, never in the
# repository; a crash leaves its input in the build directory and is named
# on stderr. The last line is "fuzz: N passed, N failed".
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

# fuzz TARGET: build and fuzz one target; its report line goes to
# $out/TARGET.result ("ok LINE" or "failed LINE" plus diagnostics).
fuzz() {
	local t=$1 bin=$out/fuzz_$1 work=$out/corpus-$1 res=$out/$1.result
	# shellcheck disable=SC2086
	if ! "$CC" -g -O1 -std=gnu11 -D_GNU_SOURCE -Ilib -Ilib/net -Ilib/policy -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined -o "$bin" "tests/fuzz/fuzz_$t.c" ${SRC[$t]} 2>"$out/$t.build.log"; then
		echo "failed fuzz: $t: build failed (log: $out/$t.build.log)" >"$res"
		return
	fi
	mkdir -p "$work"
	cp -n tests/fuzz/corpus/$t/* "$work/" 2>/dev/null || :
	if (cd "$out" && "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
		-artifact_prefix="$out/$t-" "$work" >"$out/$t.log" 2>&1); then
		echo "ok fuzz: $t: ok ($(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/$t.log" | grep -o '[0-9]*$') runs in ${secs}s)" >"$res"
	else
		{ echo "failed fuzz: $t: FAILED (log: $out/$t.log)"
		  grep -E '^(==|SUMMARY|.*runtime error)' "$out/$t.log" | head -5; } >"$res"
	fi
}

# One target per core at a time: each still fuzzes SBX_FUZZ_SECONDS on a
# core of its own, and the suite takes a fraction of the time. The lines
# come out in the targets' order once all are done.
jobs=${SBX_FUZZ_JOBS:-$(nproc)}
case $jobs in ''|*[!0-9]*|0) echo "fuzz: usage: SBX_FUZZ_JOBS must be a positive integer" >&2; exit 100 ;; esac
targets=()
for f in tests/fuzz/fuzz_*.c; do
	t=${f#tests/fuzz/fuzz_}
	t=${t%.c}
	if [ -z "${SRC[$t]:-}" ]; then
		echo "fuzz: $t: no source list in tests/fuzz/check.sh" >&2
		failed=$((failed + 1))
		continue
	fi
	rm -f "$out/$t.result"
	targets+=("$t")
	while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do wait -n; done
	fuzz "$t" &
done
wait
for t in "${targets[@]}"; do
	res=$(cat "$out/$t.result" 2>/dev/null) || res="failed fuzz: $t: no result"
	case $res in
	ok\ *) echo "${res#ok }"; passed=$((passed + 1)) ;;
	*) echo "${res#failed }" >&2; failed=$((failed + 1)) ;;
	esac
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
