#!/usr/bin/env bash
# bench/callgrind_produce.sh: instructions per Produce request and per byte of
# epochgate enforcing, from valgrind's callgrind (counts that do not depend on
# how loaded the machine is, unlike the CPU seconds of bench/run.sh).
#
# usage: bench/callgrind_produce.sh [BUILD_DIR] RECORD_BYTES [--small-frames] [--seconds S]
#   BUILD_DIR       a build with epochgate-bench (default <repo>/build-bench, as run.sh builds)
#   RECORD_BYTES    record size of the sweep's produce shape (size_sweep.h), acks=1
#   --small-frames  the sweep's small-frame shape (linger.ms 0, 1 MiB in flight)
#   --seconds S     load duration (default 20; under callgrind epochgate runs ~50x slower)
# Environment: EPOCHGATE_BIN (another epochgate binary, for an A/B), CALLGRIND_TAG
# (a prefix of the output directory).
# Writes BUILD_DIR/callgrind/[TAG]<bytes>[-small]/: callgrind.out.*, annotate-inclusive.txt,
# annotate-self.txt and summary.txt (instructions, requests, bytes, per request / per byte).
# Only epochgate runs under valgrind, from its start to its exit.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$SRC/build-bench
if [[ $# -gt 0 && ! $1 =~ ^[0-9]+$ && $1 != --* ]]; then BUILD=$(realpath -m "$1"); shift; fi
BYTES=${1:?record bytes}
shift
SMALL=()
SUFFIX=""
SECONDS_LOAD=20
while [[ $# -gt 0 ]]; do
  case $1 in
    --small-frames) SMALL=(--profile-small-frames); SUFFIX=-small ;;
    --seconds) SECONDS_LOAD=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
OUT=$BUILD/callgrind/${CALLGRIND_TAG:-}$BYTES$SUFFIX
rm -rf "$OUT"
mkdir -p "$OUT"
# Collection runs from start to exit: switching it on and off with
# callgrind_control needs vgdb, which cannot interrupt a process blocked in
# epoll_wait without ptrace (not allowed in this container), and left
# collection off. Start-up and shutdown are counted; `--seconds 0.2` measures
# them alone (subtract it).
PROF="sleep 100000"
"$BUILD/bench/epochgate-bench" --epochgate "${EPOCHGATE_BIN:-$BUILD/proxy/epochgate}" --haproxy /usr/sbin/haproxy \
  --splice-relay "$BUILD/bench/splice_relay" --out "$OUT" \
  --epochgate-wrapper "$(command -v valgrind) --tool=callgrind --callgrind-out-file=$OUT/callgrind.out.%p" \
  --profile-cmd "$PROF" --profile-seconds "$SECONDS_LOAD" --profile-workload produce \
  --profile-record-bytes "$BYTES" "${SMALL[@]}" > "$OUT/load.txt"
DUMP=$(ls -S "$OUT"/callgrind.out.* | head -1)
callgrind_annotate --inclusive=yes "$DUMP" > "$OUT/annotate-inclusive.txt"
callgrind_annotate "$DUMP" > "$OUT/annotate-self.txt"
IR=$(awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1; exit}' "$OUT/annotate-self.txt")
/usr/bin/python3 - "$IR" "$OUT/load.txt" > "$OUT/summary.txt" <<'PY'
import re, sys
ir = int(sys.argv[1])
text = open(sys.argv[2]).read()
m = re.search(r"shape: (\d+) Produce requests, (\d+) request bytes .*?records of (\d+) B", text)
reqs, req_bytes = int(m.group(1)), int(m.group(2))
recs = re.search(r"([\d.]+) GB payload", text)
print(text.strip())
print(f"instructions {ir:,}; Produce requests {reqs:,}; request bytes {req_bytes:,}")
print(f"per request {ir / reqs:,.0f} instructions; per request byte {ir / req_bytes:.3f}")
PY
cat "$OUT/summary.txt"
