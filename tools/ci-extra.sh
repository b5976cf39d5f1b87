#!/usr/bin/env bash
# tools/ci-extra.sh: the robustness gate .ci/run calls after the main tests:
# every libFuzzer target for a short fixed budget, the whole test
# suite under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
# on), and the 1-minute soak through epochgate. Exits non-zero if any part fails; runs
# every part even after one failed, and prints a line per part with its time.
#
#   tools/ci-extra.sh [MAIN_BUILD_DIR]     (default: build, as `make test` uses)
#
# Build dirs: build-fuzz (clang, EPOCHGATE_FUZZ, configured on first use) and
# build-asan (EPOCHGATE_SANITIZE with the peers), both built incrementally.
# ctest runs through tools/ctest_summary.py, which lists skipped tests and,
# with CI=true (.ci/run), fails on any.
# Knobs: FUZZ_SECONDS (per target, default 15), SOAK_MINUTES (default 1),
# JOBS (default 2), SKIP_FUZZ / SKIP_ASAN / SKIP_SOAK=1 to leave a part out.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1  # -g objects: without it the working directory is in the key (see tools/setup.sh)
main_build="${1:-build}"
jobs="${JOBS:-2}"
fuzz_seconds="${FUZZ_SECONDS:-15}"
soak_minutes="${SOAK_MINUTES:-1}"
# The librdkafka 2.15.1 build the main build uses (tools/setup.sh made it).
rdkafka="${EPOCHGATE_LIBRDKAFKA_PREFIX:-$(sed -n 's/^EPOCHGATE_LIBRDKAFKA_PREFIX:PATH=//p' \
  "$main_build/CMakeCache.txt" 2>/dev/null)}"
rdkafka="${rdkafka:-${EPOCHGATE_CACHE:-$HOME/.cache/epochgate}/librdkafka-2.15.1}"
status=0
summary=()

part() {  # part NAME COMMAND...: runs, times and records one part
  local name="$1"; shift
  local t0=$SECONDS
  echo "=== ci-extra: $name"
  "$@"
  local rc=$?
  local line
  line=$(printf '%-12s %s in %ds' "$name" "$([ $rc -eq 0 ] && echo passed || echo "FAILED (rc=$rc)")" $((SECONDS - t0)))
  summary+=("$line")
  [ $rc -eq 0 ] || status=1
}

fuzz_part() {
  if [ ! -f build-fuzz/CMakeCache.txt ]; then
    CC=clang CXX=clang++ cmake -S . -B build-fuzz -DEPOCHGATE_FUZZ=ON -DEPOCHGATE_SANITIZE=ON \
      -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DEPOCHGATE_PEERS=OFF -DEPOCHGATE_BENCH=OFF >/dev/null || return 1
  fi
  nice cmake --build build-fuzz --target fuzzers -j"$jobs" >build-fuzz/build.log 2>&1 \
    || { tail -30 build-fuzz/build.log; return 1; }
  local rc=0
  fuzz/run_fuzzers.sh build-fuzz "$fuzz_seconds" || rc=1
  # Every input that ever crashed a target, replayed.
  tools/ctest_summary.py build-fuzz -- -L fuzz --output-on-failure || rc=1
  return $rc
}

asan_part() {
  # The whole suite (unit, codec, integration, scenario, ops, faults, helm)
  # against sanitizer builds of epochgate, its tests and our peer tools; the
  # integration harness fails a test when epochgate exits non-zero, which is
  # what ASan, UBSan (halt_on_error) and LeakSanitizer (at exit) do.
  # librdkafka itself is the uninstrumented build `make test` cached.
  mkdir -p build-asan
  cmake -S . -B build-asan -DEPOCHGATE_SANITIZE=ON -DEPOCHGATE_PEERS=ON -DEPOCHGATE_BENCH=OFF \
    -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DEPOCHGATE_LIBRDKAFKA_PREFIX="$rdkafka" >build-asan/configure.log 2>&1 \
    || { tail -30 build-asan/configure.log; return 1; }
  nice cmake --build build-asan -j"$jobs" >build-asan/build.log 2>&1 \
    || { tail -30 build-asan/build.log; return 1; }
  # Left out: the container image (its own Release build inside podman), the
  # Helm chart and the Prometheus dashboard tests: none runs this build's
  # epochgate, and `make test` ran them already. The real-Kafka label too:
  # four JVMs per file next to an ASan epochgate would take CI past its hour
  # on 2 cores; its protocol paths are the ones the mock-cluster suite covers
  # under ASan here. The client-library label too (KafkaJS, sarama, kafka-go
  # and the Python clients compared direct and through epochgate): it checks
  # what clients see, and its protocol paths are those the integration and
  # scenario labels already drive under ASan here. And the secrets-in-memory
  # check: gcore of an ASan process would dump its shadow mappings.
  ASAN_OPTIONS="detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    tools/ctest_summary.py build-asan -- --output-on-failure -j"$jobs" --timeout 900 \
      -E '^(image_build|image_runs|helm_.*|monitoring\..*|realkafka\..*|faults\.secrets_in_memory)$' -LE '^clients$'
}

soak_part() {
  if [ ! -x "$main_build/proxy/epochgate" ] || [ ! -x "$main_build/tools/epochgate-rdkafka-check" ]; then
    echo "soak: $main_build has no epochgate or epochgate-rdkafka-check (run make test first)"
    return 1
  fi
  /usr/bin/python3 tools/soak/soak.py --build-dir "$main_build" --minutes "$soak_minutes"
}

[ "${SKIP_FUZZ:-0}" = 1 ] || part fuzz fuzz_part
[ "${SKIP_ASAN:-0}" = 1 ] || part asan-suite asan_part
[ "${SKIP_SOAK:-0}" = 1 ] || part soak soak_part

echo "=== ci-extra summary"
for line in "${summary[@]}"; do echo "$line"; done
exit $status
