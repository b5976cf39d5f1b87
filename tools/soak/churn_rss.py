#!/usr/bin/python3
"""Rounds of clients that leave mid-request, and epochgate's memory after each.

    /usr/bin/python3 tools/soak/churn_rss.py --build-dir build [--n 2000] [--rounds 3]
        [--modes wait,fin,rst] [--request api_versions|metadata] [--rtt-ms 0]
        [--epochgate PATH] [--malloc-stats]

Starts the 3-broker mock cluster and epochgate (tests/lib/epochgate_testlib/harness.py),
then for each mode runs `--rounds` rounds of `--n` connections, one after the
other, each sending one request and then: `wait` reads the answer and
closes; `fin` closes at once (FIN); `rst` resets at once (SO_LINGER 0).
2.5 s after each round prints epochgate's RSS and descriptors and, with
--malloc-stats, glibc's bytes in use and arena size (malloc_stats() called
in epochgate through gdb; needs gdb and ptrace rights). `--rtt-ms` delays
every broker's answers (mock `rtt`). Ends with the held gauges
(docs/metrics.md, "Memory held for clients") where the build exports them.
Binds only 127.0.0.1; every process it starts is stopped at the end.
"""

import argparse
import os
import re
import socket
import struct
import subprocess
import sys
import time
import types

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def malloc_stats(pid, log_path):
    """(in use MiB, arena MiB) from glibc's malloc_stats(), which epochgate
    prints to its stderr (the harness's log file) when gdb calls it."""
    start = os.path.getsize(log_path)
    subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "call (void)malloc_stats()"],
                   capture_output=True, timeout=60)
    time.sleep(0.3)
    with open(log_path, errors="replace") as f:
        f.seek(start)
        text = f.read()
    m = re.findall(r"Total \(incl. mmap\):\nsystem bytes\s+=\s+(\d+)\nin use bytes\s+=\s+(\d+)",
                   text)
    if not m:
        return None
    return int(m[-1][1]) / 2**20, int(m[-1][0]) / 2**20


def one_round(address, n, mode, frame):
    for _ in range(n):
        s = socket.create_connection(address, timeout=10)
        try:
            s.sendall(frame)
            if mode == "wait":
                s.recv(65536)
            elif mode == "rst":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        finally:
            s.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--epochgate", help="epochgate binary (default BUILD/proxy/epochgate)")
    ap.add_argument("--n", type=int, default=2000, help="connections per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", default="wait,fin,rst")
    ap.add_argument("--request", choices=("api_versions", "metadata"), default="api_versions")
    ap.add_argument("--rtt-ms", type=int, default=0)
    ap.add_argument("--malloc-stats", action="store_true")
    o = ap.parse_args()
    build = os.path.abspath(o.build_dir)
    options = types.SimpleNamespace(
        build_dir=build, direct=False, file_stem="churn_rss",
        epochgate=o.epochgate or os.path.join(build, "proxy", "epochgate"))
    h = harness.Harness(options, "churn_rss")
    try:
        cluster = h.start_cluster(3, ["t:3:3"])
        gate = h.start_gate(cluster.bootstrap, ["--log-level", "info"])
        for broker in (1, 2, 3):
            if o.rtt_ms:
                cluster.cmd("rtt %d %d" % (broker, o.rtt_ms))
        frame = (kw.api_versions_request(1, 0) if o.request == "api_versions"
                 else kw.metadata_request(1, ["t"], version=1))
        pid = gate.proc.proc.pid
        time.sleep(1)

        def report(what):
            line = "%-12s RSS %6.1f MiB  fds %d" % (what, rss_mib(pid),
                                                   len(os.listdir("/proc/%d/fd" % pid)))
            if o.malloc_stats:
                stats = malloc_stats(pid, gate.proc.log_path)
                if stats:
                    line += "  malloc in use %5.1f MiB  arenas %6.1f MiB" % stats
            print(line, flush=True)

        report("start")
        for mode in o.modes.split(","):
            for r in range(o.rounds):
                one_round(gate.bootstrap_address, o.n, mode, frame)
                time.sleep(2.5)
                report("%s %d" % (mode, r + 1))
        text = gate.metrics()
        for name in ("epochgate_sessions_live", "epochgate_in_flight_requests",
                     "epochgate_upstream_connections_live", "epochgate_buffer_pool_buffers",
                     "epochgate_buffer_pool_bytes"):
            if name in text:
                print("%s %g" % (name, prom_text.metric(text, name)))
    finally:
        problems = h.close()
        for p in problems:
            print("problem: %s" % p)


if __name__ == "__main__":
    main()
