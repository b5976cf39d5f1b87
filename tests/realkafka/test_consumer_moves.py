"""The Java consumer (kafka-clients 4.4.0) across real leader moves on an
Apache Kafka 4.4.0 cluster, straight at the cluster and through epochgate in
the same run (bench/real_kafka/MoveTimeline.java: an idempotent acks=all
producer at 100 records/s and a consumer of the partition while the
controller moves its leader, epoch +1). Asserts safety only: every record
acknowledged is delivered, none twice, in offset order, the consumer reads
records written under the new leader epoch, and through epochgate it went on
to the new leader's own listener (epochgate never forwards a Fetch to
another broker, so new-epoch records through epochgate come from a
connection on the new leader's listener; its client connection count there
grows during the move) and connected to no upstream address. How fast is
bench/real_kafka.py's business, not this test's.

The same safety for Debian's kafka-python 2.0.2, an old client (Fetch v4,
no leader epochs), through epochgate beside the Java consumer.

Divergence after an unclean election is test_unclean_divergence.py's.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_consumer_moves.py --build-dir build
"""

import json
import os

from epochgate_testlib import ROOT
from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib import old_consumer  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, kafka_cluster  # noqa: E402

MOVES = 3


def _move(h, c, bootstrap, topic, name):
    classes = kafka_cluster.compile_java(rk.client_prefix(),
                                         [os.path.join(ROOT, "bench", "real_kafka", "MoveTimeline.java")])
    argv, conn_log = rk.java_argv(h, c, "MoveTimeline", [
        "--bootstrap", bootstrap, "--mover", c.bootstrap, "--topic", topic, "--rate", "100",
        "--seconds", "6", "--move-at-ms", "2500"], name, classes)
    r = h.run(argv, timeout=150, check=False, name=name)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if r.returncode != 0 or not lines:
        raise AssertionError("%s exited %d: %s" % (name, r.returncode, r.stderr[-3000:]))
    return json.loads(lines[-1]), rk.connected_ports(conn_log)


def _client_connections(gate, node):
    return prom_text.metric(gate.metrics(), "epochgate_connections_total", side="client", node=node)


def _assert_safe(tag, r):
    assert r["move"].startswith("moved:"), (tag, r)
    assert r["errors"] == 0 and r["fetched"] == r["sent"], (tag, r)
    assert r["duplicates"] == 0 and r["out_of_order"] == 0, (tag, r)
    assert r["new_epoch"] > r["old_epoch"] >= 0 and r["first_new_fetch_ms"] >= 0, (tag, r)


def test_java_consumer_follows_leader_moves(h):
    c = rk.cluster(h)
    gate = h.start_gate(c.bootstrap)
    ports = rk.gate_ports(gate)
    for i in range(MOVES):
        topic = rk.create_topic(c, "cm-direct-%d" % i, partitions=1)
        r, dports = _move(h, c, c.bootstrap, topic, "direct-%d" % i)
        _assert_safe("direct", r)
        rk.assert_ports(dports, c.broker_ports, c.broker_ports, "direct control")

        topic = rk.create_topic(c, "cm-gate-%d" % i, partitions=1)
        target = 1 + rk.leaders(c, [topic])[(topic, 0)][0] % 3  # MoveTimeline's choice
        before = _client_connections(gate, target)
        r, gports = _move(h, c, gate.bootstrap, topic, "gate-%d" % i)
        _assert_safe("epochgate", r)
        rk.assert_ports(gports, ports, c.broker_ports, "Java client through epochgate")
        assert rk.leaders(c, [topic])[(topic, 0)][0] == target, (topic, r)
        assert _client_connections(gate, target) > before, \
            "no client connection on the new leader's (node %d) listener" % target
        h.note("move %d through epochgate: first new-epoch record fetched %.0f ms after the move" % (
            i + 1, r["first_new_fetch_ms"]))
    text = gate.metrics()
    h.note("warm upstreams: %d hits, %d misses" % (
        prom_text.metric(text, "epochgate_upstream_warm_total", outcome="hit"),
        prom_text.metric(text, "epochgate_upstream_warm_total", outcome="miss")))


def test_kafka_python_consumer_follows_leader_moves(h):
    """Debian's kafka-python 2.0.2 (Fetch v4, no leader epochs: epochgate
    forwards its stale fetch to the old leader, which refuses it itself)
    reads each moved partition through epochgate beside MoveTimeline's Java
    consumer: every record the partition holds (read straight from the
    cluster afterwards) once, in offset order."""
    c = rk.cluster(h)
    gate = h.start_gate(c.bootstrap)
    for i in range(2):
        topic = rk.create_topic(c, "cm-kp-%d" % i, partitions=1)
        reader = old_consumer.Reader(gate.bootstrap, topic, bound=120)
        h.on_close(reader.stop)
        r, _ = _move(h, c, gate.bootstrap, topic, "kp-gate-%d" % i)
        _assert_safe("epochgate", r)
        direct = old_consumer.Reader(c.bootstrap, topic, bound=60)
        h.on_close(direct.stop)
        direct.wait_for(r["sent"], timeout=60)
        direct.stop()
        stored = [v for _, v in direct.got]
        assert len(stored) == r["sent"], (len(stored), r)
        reader.wait_for(len(stored), timeout=30)
        reader.stop()
        old_consumer.assert_read_exactly("kafka-python through epochgate, move %d" % (i + 1), reader, stored)
        h.note("move %d (%s): kafka-python %s read %d records through epochgate, 0 lost, 0 twice, in order" % (
            i + 1, r["move"], reader.version, len(reader.got)))


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 600

if __name__ == "__main__":
    harness.main(globals())
