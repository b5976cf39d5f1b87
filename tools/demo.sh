#!/usr/bin/env bash
# The README's demo: epochgate in front of an embedded 3-broker cluster, a
# librdkafka 2.15.1 producer and consumer through it, a partition leader
# moving mid-stream, and what epochgate did about it.
#   tools/demo.sh [build-dir] [--keep] [--tls | --real]
# Needs a build from tools/setup.sh (or `make demo`, which runs it first).
# Finishes by itself in about 20 s; --keep leaves the cluster and epochgate
# running until Ctrl-C; --tls (make demo TLS=1) tells the same story with TLS
# on both sides (Debian's HAProxy as the brokers' TLS listeners, certificates
# from tools/tls/make-certs.sh). --real (make demo KAFKA=real) tells it on a
# real Apache Kafka 4.4.0 cluster (tools/kafka/, about a minute, most of it
# the cluster's start; logs in <build-dir>/demo-real/); --real --tls (make demo
# KAFKA=real TLS=1) runs it on the brokers' SASL_SSL listeners with TLS and
# SASL on both sides of epochgate. Logs go to
# <build-dir>/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
args=()
real=0
for a in "$@"; do
  case "$a" in
    --keep|-k) args+=(--keep) ;;
    --tls) args+=(--tls) ;;
    --real) real=1 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "demo: unknown option $a (try --help)" >&2; exit 2 ;;
    *) build=$a ;;
  esac
done
for bin in proxy/epochgate tools/epochgate-mockcluster tools/epochgate-rdkafka-check; do
  if [ ! -x "$build/$bin" ]; then
    echo "demo: $build/$bin is missing: run 'tools/setup.sh $build' (or 'make demo') first" >&2
    exit 1
  fi
done
# Debian's python3 (tools/setup.sh installs it); a pyenv python3 on PATH works too.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
if [ "$real" = 1 ]; then
  exec "$py" tools/demo_real.py --build-dir "$build" "${args[@]}"
fi
exec "$py" tools/demo.py --build-dir "$build" "${args[@]}"
