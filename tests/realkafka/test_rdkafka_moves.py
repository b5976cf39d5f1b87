"""librdkafka 2.15.1 (epochgate-rdkafka-check: an idempotent acks=all
producer and a consumer group) beside the Java tests, against a real Apache
Kafka 4.4.0 cluster, straight at the cluster and through epochgate at the
same time on two topics with the same assignment, across PREFERRED moves of
partition 0's leader, with epochgate's Produce rerouting off and on.

Asserts, both ways: nothing lost, duplicated or out of order, no message
failed for the application, every connection through epochgate to its
ports. Notes give what a user compares: the first acknowledgement from the
new leader after each move and the longest delivery latency, direct and
through epochgate, and epochgate's hint and reroute counters.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_rdkafka_moves.py --build-dir build
"""

import os
import time

from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, sl  # noqa: E402

SECONDS = 14
RATE = 300


def _moves(h, reroute):
    c = rk.cluster(h)
    tag = "on" if reroute else "off"
    topics = {mode: rk.create_topic(c, "rd-%s-%s" % (tag, mode)) for mode in ("direct", "gate")}
    gate = sl.start_gate(h, None, upstream=c.bootstrap, config=(
        "refresher:\n  interval_ms: 2000\npolicy:\n  rules:\n"
        "    - topics: %s\n      mode: enforce\n      reroute: %s\n" % (topics["gate"], str(reroute).lower())))
    checks, logs, timelines = {}, {}, {}
    for mode, bootstrap in (("direct", c.bootstrap), ("gate", gate.bootstrap)):
        logs[mode] = os.path.join(h.workdir, "rdkafka-%s.log" % mode)
        timelines[mode] = os.path.join(h.workdir, "timeline-%s.csv" % mode)
        checks[mode] = h.rdkafka_check_async([
            "--bootstrap", bootstrap, "--topic", topics[mode], "--partitions-keyed", "--idempotent",
            "--acks", "all", "--duration-s", str(SECONDS), "--rate", str(RATE), "--concurrent",
            "--consume-group", "rg-%s-%s" % (tag, mode), "--timeline", timelines[mode],
            "--debug", "broker", "--log-file", logs[mode]], name="rdkafka-" + mode)
    before = sl.scrape(gate)
    time.sleep(4)
    moves = []
    for _ in range(2):
        (leader, epoch) = rk.leaders(c, [topics["gate"]])[(topics["gate"], 0)]
        target = 1 + leader % 3
        moved_us = int(time.time() * 1e6)
        for mode in ("gate", "direct"):
            c.ctl("move %s 0 %d" % (topics[mode], target))
        moves.append((moved_us, target))
        time.sleep(4)
    results = {mode: checks[mode].result(timeout=SECONDS + 90, expect_pass=False) for mode in checks}
    after = sl.scrape(gate)
    for mode, s in results.items():
        assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, (mode, s)
        assert s["failed"] == 0 and s["acked"] == s["produced"], (mode, s)
    ports = rk.gate_ports(gate)
    got = h.connected_ports(logs["gate"])
    assert got and got <= ports, "librdkafka through epochgate dialled %s, epochgate's %s" % (got, ports)
    assert h.connected_ports(logs["direct"]) <= set(c.broker_ports)
    for mode in ("direct", "gate"):
        rows = harness.read_timeline(timelines[mode])
        rec = [harness.recovery_ms(rows, us, 0, new) for us, new in moves]
        h.note("reroute %s, %s: first ack from the new leader after each move %s ms; latency p50 %.1f "
               "p99 %.1f max %.1f ms; %d acked" % (
                   tag, mode, ["%.1f" % r if r is not None else "-" for r in rec],
                   results[mode]["latency_ms"]["p50"], results[mode]["latency_ms"]["p99"],
                   results[mode]["latency_ms"]["max"], results[mode]["acked"]))
    h.note("reroute %s, epochgate: %s; reroutes delivered %d" % (
        tag, sl.fences_text(after), sl.delta(after, before, "epochgate_reroutes_total", result="delivered")))
    return before, after


def test_librdkafka_moves_reroute_off(h):
    _moves(h, False)


def test_librdkafka_moves_reroute_on(h):
    _moves(h, True)


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 240

if __name__ == "__main__":
    harness.main(globals())
