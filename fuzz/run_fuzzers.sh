#!/usr/bin/env bash
# fuzz/run_fuzzers.sh: runs every libFuzzer target of a build for a fixed time
# each, from the seed corpus (golden frames + codec samples, rewritten every
# run) plus the corpus kept from earlier runs, and prints executions and
# coverage (libFuzzer's cov: and ft:) per target. Exits non-zero if any target
# crashed, leaked, timed out or ran out of memory; the input that did it is
# left in BUILD/fuzz/artifacts/<target>/ (copy it to fuzz/regressions/<target>/
# and write a regression test). Runs only what the build holds; no network.
#
#   fuzz/run_fuzzers.sh BUILD_DIR SECONDS_PER_TARGET [target ...]
set -uo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
build="${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS_PER_TARGET [target ...]}"
seconds="${2:?seconds per target}"
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(fuzz_frame_splitter fuzz_headers fuzz_record_batch fuzz_decode fuzz_session_client fuzz_session_broker fuzz_pre_auth)
fi

bin="$build/fuzz"
seeds="$bin/seeds"
rm -rf "$seeds"
"$bin/fuzz_seed_corpus" --golden "$root/tests/codec/golden" --out "$seeds" || exit 1

# Leaks are findings too; a slow input is a finding at 10 s.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=0
printf '%-22s %12s %8s %8s %8s %s\n' target executions exec/s cov ft result
for t in "${targets[@]}"; do
  corpus="$bin/corpus/$t"
  artifacts="$bin/artifacts/$t/"
  mkdir -p "$corpus" "$artifacts" "$seeds/$t"
  log="$bin/logs/$t.log"
  mkdir -p "$bin/logs"
  "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=32768 \
    -dict="$here/kafka.dict" -print_final_stats=1 -artifact_prefix="$artifacts" \
    "$corpus" "$seeds/$t" > "$log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*')
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*')
  result=ok
  if [ $rc -ne 0 ]; then
    result="FAILED rc=$rc ($(grep -m1 -E 'ERROR: |SUMMARY: |session_rig: ' "$log" | cut -c1-120)) log $log"
    failed=1
  fi
  printf '%-22s %12s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$result"
done
exit $failed
