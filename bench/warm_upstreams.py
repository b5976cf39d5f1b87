"""A new client connection's first answer on a broker's listener, with and
without the warm upstream pool (limits.warm_upstreams_per_broker), in one
run against librdkafka's mock cluster.

Each round opens one new connection to node 1 straight at the mock broker,
one to node 1's listener of an epochgate with the pool (opt-in, 1 per
broker and worker) and one to an epochgate with the default (0), in rotated
order, and times connect() to the answer of one ApiVersions v0; rounds are
spaced so the pool refills in between (it replaces a taken connection at
once). What it shows: the time a first request waits for epochgate's own
upstream dial and ApiVersions probe without the pool, which a consumer pays
on its first connection to a new leader's listener after a move.

    /usr/bin/python3 bench/warm_upstreams.py --build-dir build [--rounds 200] [--real]

With --real the cluster is Apache Kafka (tools/kafka/kafka_cluster.py, the
real-Kafka tests' one; wrap the run in `flock /work/realkafka.lock`).

The machine is shared: the figures are ratios within one run.
"""

import argparse
import os
import socket
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lib"))  # epochgate_testlib
sys.path.insert(0, os.path.join(ROOT, "tools"))  # demo.py: the Demo runner
from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib.prom_text import metric  # noqa: E402
from epochgate_testlib.realkafka_lib import kafka_cluster  # noqa: E402
from demo import Demo  # noqa: E402


def first_answer_ms(address):
    start = time.perf_counter()
    s = socket.create_connection(address, timeout=10)
    try:
        s.sendall(kw.api_versions_request(0x5701, 0))
        data = b""
        while len(data) < 4 or len(data) < 4 + int.from_bytes(data[:4], "big"):
            chunk = s.recv(65536)
            if not chunk:
                raise AssertionError("closed by %s:%d before answering" % address)
            data += chunk
        return (time.perf_counter() - start) * 1000.0
    finally:
        s.close()


def node_address(gate, node):
    conn = kw.Connection(*gate.bootstrap_address, timeout=10)
    try:
        conn.send(kw.metadata_request(0x5702, [], version=1))
        md = kw.parse_metadata_response(conn.recv_frame(), 1)
        host, port, _ = md["brokers"][node]
        return host, port
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--work-dir", default="")
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--spacing-ms", type=int, default=50)
    ap.add_argument("--real", action="store_true", help="Apache Kafka instead of the mock cluster")
    o = ap.parse_args()
    demo = Demo(o.build_dir, o.work_dir or os.path.join(o.build_dir, "bench-warm-upstreams"))
    try:
        if o.real:
            cluster = kafka_cluster.KafkaCluster(os.path.join(demo.workdir, "kafka"))
            demo.on_close(cluster.stop)
            cluster.start()
            direct_1 = ("127.0.0.1", cluster.ports[1])
        else:
            cluster = harness.MockCluster(demo, 3, [], ("--rebalance-delay-ms", "0"))
            demo.on_close(cluster.proc.stop)
            direct_1 = cluster.broker_address(1)
        warm_cfg = os.path.join(demo.workdir, "warm.yaml")
        with open(warm_cfg, "w") as f:
            f.write("limits:\n  warm_upstreams_per_broker: 1\n")
        warm = harness.Epochgate(demo, cluster.bootstrap, ["--config", warm_cfg])
        demo.on_close(warm.stop)
        cold = harness.Epochgate(demo, cluster.bootstrap, [])
        demo.on_close(cold.stop)
        targets = {"direct": direct_1, "epochgate (warm pool)": node_address(warm, 1),
                   "epochgate (pool off)": node_address(cold, 1)}
        time.sleep(1.5)  # the pool fills after the first metadata refresh
        times = {k: [] for k in targets}
        names = list(targets)
        for r in range(o.rounds):
            for name in names[r % 3:] + names[:r % 3]:
                times[name].append(first_answer_ms(targets[name]))
            time.sleep(o.spacing_ms / 1000.0)
        text = warm.metrics()
        hits = metric(text, "epochgate_upstream_warm_total", outcome="hit")
        misses = metric(text, "epochgate_upstream_warm_total", outcome="miss")
        print("\n%s cluster" % ("Apache Kafka %s" % kafka_cluster.DEFAULT_VERSION if o.real
                                 else "librdkafka mock"))
        print("\n| Path | new connection to first answer: median / p90 / max (ms) |")
        print("|---|---|")
        for name in names:
            xs = sorted(times[name])
            print("| %s | %.2f / %.2f / %.2f |" % (name, statistics.median(xs), xs[int(len(xs) * 0.9)],
                                                  xs[-1]))
        med = {n: statistics.median(times[n]) for n in names}
        print("\nPool on / pool off, median: **%.2f**; pool hits %d, misses %d; %d rounds, %d ms apart; "
              "load average %s" % (med["epochgate (warm pool)"] / med["epochgate (pool off)"], hits, misses,
                                   o.rounds, o.spacing_ms, " ".join("%.2f" % x for x in os.getloadavg())))
        print("\nCommand: /usr/bin/python3 bench/warm_upstreams.py --build-dir %s --rounds %d --spacing-ms %d%s"
              % (o.build_dir, o.rounds, o.spacing_ms, " --real" if o.real else ""))
    finally:
        demo.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
