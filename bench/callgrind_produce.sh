#!/usr/bin/env bash
# bench/callgrind_produce.sh: instructions per Produce request and per byte of
# epochgate enforcing, from valgrind's callgrind (counts that do not depend on
# how loaded the machine is, unlike the CPU seconds of bench/run.sh).
#
# usage: bench/callgrind_produce.sh [BUILD_DIR] RECORD_BYTES [--small-frames] [--fetch] [--seconds S]
#   BUILD_DIR       a build with epochgate-bench (default <repo>/build-bench, as run.sh builds)
#   RECORD_BYTES    record size of the sweep's produce shape (size_sweep.h), acks=1
#   --small-frames  the sweep's small-frame shape (16 KiB batches closed when full, 1 MiB in flight)
#   --fetch         consume instead (epochgate-bench's consume profile at the sweep's Fetch
#                   shape for RECORD_BYTES: its preload and consumer); with --small-frames,
#                   responses of at most 16 KiB (fill batches of 4 KiB,
#                   max.partition.fetch.bytes 4 KiB). Per request then means per Fetch response.
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
WORKLOAD=produce
while [[ $# -gt 0 ]]; do
  case $1 in
    --small-frames) SMALL=(--profile-small-frames); SUFFIX=-small ;;
    --seconds) SECONDS_LOAD=$2; shift ;;
    --fetch) WORKLOAD=consume ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
[[ $WORKLOAD == consume ]] && SUFFIX=-fetch$SUFFIX
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
  --profile-cmd "$PROF" --profile-seconds "$SECONDS_LOAD" --profile-workload "$WORKLOAD" \
  --profile-record-bytes "$BYTES" "${SMALL[@]}" > "$OUT/load.txt"
DUMP=$(ls -S "$OUT"/callgrind.out.* | head -1)
callgrind_annotate --inclusive=yes "$DUMP" > "$OUT/annotate-inclusive.txt"
callgrind_annotate "$DUMP" > "$OUT/annotate-self.txt"
IR=$(awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1; exit}' "$OUT/annotate-self.txt")
/usr/bin/python3 - "$IR" "$OUT" > "$OUT/summary.txt" <<'PY'
import re, sys
ir, out = int(sys.argv[1]), sys.argv[2]
text = open(out + "/load.txt").read()
inclusive = open(out + "/annotate-inclusive.txt").read()
self_cost = open(out + "/annotate-self.txt").read()
m = re.search(r"shape: (\d+) (Produce requests|Fetch responses), (\d+) (?:request|response) bytes", text)
reqs, what, req_bytes = int(m.group(1)), m.group(2), int(m.group(3))
unit = "request" if what.startswith("Produce") else "Fetch response"
num = lambda s: int(s.replace(",", ""))
# Outside memcpy (its Ir are the bytes it copied, see bench/PROFILE.md), for
# the whole program and for the worker threads alone (no start-up). Only
# memcpy's own lines: annotate-self.txt also lists calls into it ("=> ...")
# under their callers, which are the same instructions counted again.
memcpy = sum(num(x) for x in re.findall(
    r"^\s*([\d,]+) \([^)]*\)\s+(?!=>)\S*memmove-vec-unaligned-erms\.S:__mem", self_cost, re.M))
w = re.search(r"^\s*([\d,]+) .*Worker::start\(\)::\{lambda\(\)#1\}.*_M_run", inclusive, re.M)
workers = num(w.group(1)) if w else 0
print(text.strip())
print(f"instructions {ir:,}; {what} {reqs:,}; bytes {req_bytes:,} ({req_bytes // max(reqs, 1):,} per {unit})")
print(f"per {unit} {ir / reqs:,.0f} instructions; per byte {ir / req_bytes:.3f}")
print(f"per {unit} outside memcpy: program {(ir - memcpy) / reqs:,.0f}, "
      f"worker threads {(workers - memcpy) / reqs:,.0f}")
PY
cat "$OUT/summary.txt"
