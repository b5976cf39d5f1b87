#!/usr/bin/env bash
# bench/run.sh: the one command behind bench/RESULTS.md and bench/latency.png
# (throughput, and the leader-move benchmark). Installs HAProxy and
# gnuplot from Debian when missing, builds epochgate and the bench programs in
# Release, runs epochgate-bench (about 16 minutes on 2 cores, the record-size
# sweep half of it (--sweep-rounds 1 halves that), up to 22 on a
# loaded machine; --scale adds 4-5), draws the plot
# and copies the results into bench/. Never part of the test suite.
#
# usage: bench/run.sh [-h|--help] [BUILD_DIR] [--soak-minutes N] [--profile] [--quick]
#                     [any other epochgate-bench option, e.g. --rounds 5]
#   BUILD_DIR        build tree to (re)use, default <repo>/build-bench
#   --soak-minutes N also run epochgate for N minutes under steady load and
#                    report its RSS over time (the target asks for 10)
#   --profile        also profile epochgate with perf (Debian linux-perf)
#                    during produce and consume runs and refresh the tables in
#                    bench/PROFILE.md
#   --profile-only   only the profile (RESULTS.md is left alone)
#   --quick          1 round of 2 s runs: a smoke test, not for RESULTS.md
#   --scale          also the scale scenarios (100,000 partitions, a sidecar
#                    fleet, 10,000 idle connections; about 4-5 more minutes)
#   --tls            also the TLS table (bench/tls_bench.py): TLS on both sides,
#                    epochgate against HAProxy terminating and originating TLS,
#                    written to BUILD_DIR/bench-results/TLS.md
set -euo pipefail

# The usage text is this header: print it and stop, before anything is
# installed or built.
if [[ " $* " == *" --help "* || " $* " == *" -h "* ]]; then
  sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
  exit 0
fi

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$SRC/build-bench
if [[ $# -gt 0 && $1 != --* ]]; then
  BUILD=$(realpath -m "$1")
  shift
fi
PROFILE=0
PROFILE_ONLY=0
QUICK=0
TLS=0
PASS=()
CMDLINE="bench/run.sh"
[[ $BUILD != "$SRC/build-bench" ]] && CMDLINE+=" ${BUILD#$SRC/}"
while [[ $# -gt 0 ]]; do
  case $1 in
    --profile) PROFILE=1 ;;
    --profile-only) PROFILE=1; PROFILE_ONLY=1 ;;
    --quick) QUICK=1 ;;
    --tls) TLS=1 ;;
    *) PASS+=("$1") ;;
  esac
  CMDLINE+=" $1"
  shift
done

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }
need_pkg=()
command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy ]] || need_pkg+=(haproxy)
command -v gnuplot >/dev/null 2>&1 || need_pkg+=(gnuplot-nox)
if [[ $PROFILE -eq 1 ]] && ! command -v perf >/dev/null 2>&1; then need_pkg+=(linux-perf); fi
if [[ ${#need_pkg[@]} -gt 0 ]]; then
  echo "run.sh: installing ${need_pkg[*]}" >&2
  as_root apt-get install -y "${need_pkg[@]}" >&2
fi
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)

# Release build of exactly what the benchmark runs.
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DEPOCHGATE_BENCH=ON -DEPOCHGATE_PEERS=ON)
RDK=${EPOCHGATE_LIBRDKAFKA_PREFIX:-$HOME/.cache/epochgate/librdkafka-2.15.1}
[[ -f $RDK/lib/librdkafka.so ]] && CMAKE_ARGS+=(-DEPOCHGATE_LIBRDKAFKA_PREFIX="$RDK")
cmake -S "$SRC" -B "$BUILD" "${CMAKE_ARGS[@]}" >/dev/null
nice cmake --build "$BUILD" --target epochgate epochgate-bench splice_relay codec_bench policy_bench \
  -j"$(nproc)" >&2
if [[ $TLS -eq 1 ]]; then
  nice cmake --build "$BUILD" --target epochgate-mockcluster epochgate-rdkafka-check -j"$(nproc)" >&2
fi

REV=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$SRC" status --porcelain -- proxy codec policy config metrics 2>/dev/null) ]]; then
  REV+=" with uncommitted changes in proxy/codec/policy/config/metrics"
fi
OUT=$BUILD/bench-results
rm -rf "$OUT"
mkdir -p "$OUT"
BENCH=("$BUILD/bench/epochgate-bench" --epochgate "$BUILD/proxy/epochgate" --haproxy "$HAPROXY"
       --splice-relay "$BUILD/bench/splice_relay"
       --codec-bench "$BUILD/bench/codec_bench" --policy-bench "$BUILD/bench/policy_bench"
       --out "$OUT" --source-rev "$REV")
if [[ $QUICK -eq 1 ]]; then
  BENCH+=(--rounds 1 --seconds 2 --ping-count 2000)
fi

if [[ $PROFILE_ONLY -eq 0 ]]; then
  "${BENCH[@]}" --command "$CMDLINE" ${PASS[@]+"${PASS[@]}"}
  (cd "$OUT" && gnuplot latency.gp)
  if [[ $QUICK -eq 0 ]]; then
    # The soak section comes from a separate hour-long run (tools/soak), not
    # from this one: carried over from the file being replaced.
    soak_section=$(awk '/^## /{keep = /^## Soak/} keep' "$SRC/bench/RESULTS.md" 2>/dev/null || true)
    # So is the TLS section when this run has no --tls (it is replaced below
    # when it has): a regeneration without --tls used to drop it.
    tls_section=""
    if [[ $TLS -eq 0 ]]; then
      tls_section=$(awk '/^## /{keep = /^## TLS/} keep' "$SRC/bench/RESULTS.md" 2>/dev/null || true)
    fi
    cp "$OUT/RESULTS.md" "$SRC/bench/RESULTS.md"
    if [[ -n "$tls_section" ]]; then printf '\n%s\n' "$tls_section" >> "$SRC/bench/RESULTS.md"; fi
    if [[ -n "$soak_section" ]]; then printf '\n%s\n' "$soak_section" >> "$SRC/bench/RESULTS.md"; fi
    cp "$OUT/latency.png" "$SRC/bench/latency.png"
    echo "run.sh: wrote bench/RESULTS.md and bench/latency.png" >&2
  else
    echo "run.sh: quick run, results left in $OUT" >&2
  fi
fi

if [[ $PROFILE -eq 1 ]]; then
  TOP=$OUT/perf-top.txt
  : > "$TOP"
  for WORKLOAD in produce consume; do
    PERF_DATA=$OUT/perf-$WORKLOAD.data
    # DWARF call graphs: the Release build has no frame pointers, and the
    # callers inside epochgate are the point.
    PERF_CMD="perf record -e cpu-clock -F 500 --call-graph dwarf,16384 -o $PERF_DATA -p {pid}"
    "${BENCH[@]}" --profile-cmd "$PERF_CMD" --profile-seconds 20 --profile-workload "$WORKLOAD" \
      > "$OUT/profile-$WORKLOAD.txt"
    perf report -i "$PERF_DATA" --stdio --no-children -g none --sort dso,symbol \
      > "$OUT/perf-$WORKLOAD-report.txt" 2>/dev/null
    perf report -i "$PERF_DATA" --stdio --no-children -g none --sort dso \
      > "$OUT/perf-$WORKLOAD-dso.txt" 2>/dev/null
    perf report -i "$PERF_DATA" --stdio --children -g none --sort symbol \
      > "$OUT/perf-$WORKLOAD-children.txt" 2>/dev/null
    {
      echo "### $WORKLOAD"
      echo
      echo "\`${PERF_CMD//\{pid\}/<epochgate pid>}\` for 20 s of $WORKLOAD through epochgate"
      echo "enforcing (source $REV): $(cat "$OUT/profile-$WORKLOAD.txt")"
      echo
      echo "By binary:"
      echo
      echo '```'
      grep -E '^ +[0-9]' "$OUT/perf-$WORKLOAD-dso.txt" | sed -E 's/ +$//' | head -8 || true
      echo '```'
      echo
      echo "Top symbols (self time, share of all epochgate samples):"
      echo
      echo '```'
      grep -E '^ +[0-9]' "$OUT/perf-$WORKLOAD-report.txt" | sed -E 's/ +/ /g; s/ - - *$//' \
        | head -20 || true
      echo '```'
      echo
      echo "epochgate's own functions, inclusive (children) / self share of all samples:"
      echo
      echo '```'
      grep -E '^ +[0-9].*epochgate::' "$OUT/perf-$WORKLOAD-children.txt" \
        | sed -E 's/ +/ /g; s/ - - *$//' | head -12 || true
      echo '```'
      echo
    } >> "$TOP"
  done
  PROFILE_MD=$SRC/bench/PROFILE.md
  if [[ ! -f $PROFILE_MD ]]; then
    printf '# epochgate profile\n\n<!-- perf-top:begin -->\n<!-- perf-top:end -->\n' > "$PROFILE_MD"
  fi
  # Replace only the generated block; the reading around it is written by hand.
  /usr/bin/python3 - "$PROFILE_MD" "$TOP" <<'PY'
import sys
path, top = sys.argv[1], open(sys.argv[2]).read()
text = open(path).read()
begin, end = "<!-- perf-top:begin -->", "<!-- perf-top:end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(path, "w").write(head + begin + "\n" + top + end + tail)
PY
  echo "run.sh: refreshed the profile tables in bench/PROFILE.md (raw data: $OUT/perf-*.data)" >&2
fi

if [[ $TLS -eq 1 ]]; then
  TLS_ARGS=(--build-dir "$BUILD" --out "$OUT/TLS.md")
  [[ $QUICK -eq 1 ]] && TLS_ARGS+=(--messages 20000 --rounds 1 --idle 200)
  /usr/bin/python3 "$SRC/bench/tls_bench.py" "${TLS_ARGS[@]}"
  echo "run.sh: TLS table in $OUT/TLS.md" >&2
  if [[ $QUICK -eq 0 && $PROFILE_ONLY -eq 0 ]]; then
    # Into RESULTS.md before the soak section (kept last), as its own section.
    /usr/bin/python3 - "$SRC/bench/RESULTS.md" "$OUT/TLS.md" "$CMDLINE" <<'PY'
import sys
path, tls, cmd = sys.argv[1], open(sys.argv[2]).read().strip(), sys.argv[3]
text = open(path).read()
section = "## TLS on both sides\n\nFrom `" + cmd + "` (bench/tls_bench.py, same build):\n\n" + tls + "\n"
at = text.find("\n## Soak")
text = text + "\n" + section if at < 0 else text[:at + 1] + section + "\n" + text[at + 1:]
open(path, "w").write(text)
PY
    echo "run.sh: TLS section added to bench/RESULTS.md" >&2
  fi
fi
