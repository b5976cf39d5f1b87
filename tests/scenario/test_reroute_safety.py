"""Rerouting's safety rules end to end (docs/rerouting.md, "Safety rules"),
each with independent clients on the embedded mock cluster:

- identity: a librdkafka 2.15.1 producer that logged in with SASL PLAIN
  through epochgate (passthrough, the SASL gate fixture in front of every
  mock broker) has no upstream connection of epochgate's own with its
  principal, so a leader move is never rerouted for it: it falls back
  (`identity`), the client is told NOT_LEADER_OR_FOLLOWER and resends, and
  epochgate never sends a request on a connection that did not log in;
- transactions: librdkafka 2.15.1's transactional producer with a leader
  move during a transaction: rerouted writes are part of it, the commit
  succeeds, every record is stored once and a read_committed consumer
  (the check's own consumer group) reads each once;
- upstream_failed: the new leader goes down while a rerouted write waits
  for its answer: the client gets NOT_LEADER_OR_FOLLOWER with a hint that
  names the leader, promptly, and its connection keeps working;
- the reroute bound covers connecting: on a cold pool whose leader takes
  longer to connect than the request's timeout allows, the client's answer
  comes within the bound (timeout_ms + 1 s), not after the dial plus it;
- max_in_flight: with `reroute.max_in_flight: 1`, of two concurrent
  reroutes from two connections one is delivered and the other falls back;
- a Produce that names one partition twice is not rerouted
  (`duplicate_partition`): both copies get NOT_LEADER_OR_FOLLOWER plus the
  hint and the leader stores neither;
- the record copies count against limits.buffer_budget_bytes: a write
  whose copy does not fit falls back (`buffer_budget`), a small one is
  rerouted on the same gate.

The last three use raw frames (tests/lib/epochgate_testlib/kafka_wire.py, checked
against librdkafka and kafka-python in tests/integration) so that the
moment each fault strikes is exact.
"""

import os

HERE = os.path.dirname(os.path.abspath(__file__))
import time  # noqa: E402

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402
from epochgate_testlib.sasl_cluster import SaslCluster, sasl_args  # noqa: E402

REROUTES = "epochgate_reroutes_total"


def _reasons(after, before):
    return {r: v for r, v in ((r, sl.delta(after, before, REROUTES, result="fell_back", reason=r))
                              for r in ("identity", "upstream_failed", "earlier_in_flight",
                                        "later_in_flight", "stream_fell_back", "second_hop",
                                        "no_leader", "max_in_flight"))
            if v}


def test_sasl_passthrough_client_is_never_rerouted_on_another_identity(h):
    topic = "idn"
    sc = SaslCluster(h, ["%s:1:3" % topic])
    cluster = sc.cluster
    cluster.cmd("leader %s 0 1" % topic)
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(topic), upstream=sc.bootstrap)
    log = os.path.join(h.workdir, "sasl-producer.rdkafka.log")
    props = []
    for kv in sasl_args("PLAIN")[1::2]:
        props += ["-X", kv]
    args = ["--bootstrap", gate.bootstrap, "--topic", topic, "--acks", "all", "--idempotent",
            "--duration-s", "5", "--rate", "500", "--consume-group", "g-idn",
            "--debug", "broker,msg", "--log-file", log] + props
    start = sl.end_offset(cluster, topic, 0)
    before = sl.scrape(gate)
    mark = len(sc.events())
    check = h.rdkafka_check_async(args)
    sl.wait_end_offset_above(cluster, topic, 0, start + 300, timeout=30,
                             what="the SASL producer to write 300 records")
    cluster.move_leader(topic, 0, 2)
    s = check.result(timeout=90)
    after = sl.scrape(gate)
    # The client's view: every record delivered once (it was told and resent).
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"] > 1000, s
    told = sl.client_leader_errors(log, topic, 0)
    assert told >= 1, "the producer never saw NOT_LEADER_OR_FOLLOWER: was it rerouted?"
    reasons = _reasons(after, before)
    assert reasons.get("identity", 0) >= 1, reasons
    assert sl.delta(after, before, REROUTES, result="delivered") == 0, reasons
    assert "upstream_failed" not in reasons, reasons
    # The broker side: no Produce came on a connection that had not logged
    # in (the gate closes one that sends a request before authenticating;
    # epochgate's refresher, which has no credentials here, shows as
    # Metadata, api key 3, refused the same way).
    refused = [e for e in sc.events(mark) if e.get("event") == "closed"
               and "api key 0 before authentication" in e.get("reason", "")]
    assert not refused, refused
    h.note("SASL PLAIN producer across a move: %d produced, told NOT_LEADER %d times, "
           "fell back %s, nothing rerouted" % (s["produced"], told, reasons))


test_sasl_passthrough_client_is_never_rerouted_on_another_identity.timeout = 150


def test_transactional_producer_rerouted_commits_once(h):
    topic = "txn"
    cluster = h.start_cluster(3, ["%s:1:3" % topic])
    cluster.cmd("leader %s 0 1" % topic)
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(topic))
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [topic])
    log = os.path.join(h.workdir, "txn-producer.rdkafka.log")
    args = ["--bootstrap", gate.bootstrap, "--topic", topic, "--acks", "all",
            "--transactional", "commit", "--messages", "4000", "--rate", "1000",
            "--consume-group", "g-txn",
            "--debug", "broker,msg,eos", "--log-file", log]
    start = sl.end_offset(cluster, topic, 0)
    before = sl.scrape(gate)
    check = h.rdkafka_check_async(args)
    sl.wait_end_offset_above(cluster, topic, 0, start + 300, timeout=30,
                             what="the transactional producer to write 300 records")
    # The cluster moves first, as Kafka's controller does: the old leader's
    # NOT_LEADER_OR_FOLLOWER (with its CurrentLeader hint) is what epochgate
    # reroutes, and the client's next writes to the old listener follow. A
    # view-first move would leave a window in which the new broker does not
    # lead yet: a write rerouted there is refused and rightly falls back
    # (second_hop), and whether one lands in it is timing.
    cluster.cmd("leader %s 0 2" % topic)
    s = check.result(timeout=120)
    after = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"] == 4000, s
    with open(log, errors="replace") as f:
        text = f.read()
    for bad in ("OUT_OF_ORDER_SEQUENCE", "Fatal error", "fatal error", "abortable error"):
        assert bad not in text, "producer log: %s" % bad
    delivered = sl.delta(after, before, REROUTES, result="delivered")
    reasons = _reasons(after, before)
    assert delivered >= 1, (delivered, reasons)
    h.note("transactional producer (commit) across a leader move: %d produced and read "
           "committed once; %d partitions rerouted, fell back %s"
           % (s["produced"], delivered, reasons or "never"))


test_transactional_producer_rerouted_commits_once.timeout = 180


RAW = "rr"
HERE_BROKER, OTHER = 1, 2


def _raw_setup(h, extra=""):
    """p0 led by broker 1, p1 and p2 by broker 2; the view knows it; raw
    writes go to broker 1's listener, so p1 and p2 are rerouted."""
    cluster = h.start_cluster(3, ["%s:3:3" % RAW])
    for p, b in ((0, HERE_BROKER), (1, OTHER), (2, OTHER)):
        cluster.cmd("leader %s %d %d" % (RAW, p, b))
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(RAW, extra=extra))
    gc = sl.GateClient(h, gate)
    md = gc.metadata([RAW])
    for p in range(3):
        part = md["topics"][RAW]["partitions"][p]
        sl.wait_view(gate, RAW, p, part["leader"], part["leader_epoch"])
    return cluster, gate, gc


def _write(conn, corr, partition, value, timeout_ms=10000):
    conn.send(sw.produce_request(corr, RAW, [(partition, kw.record_batch([value]))], acks=1,
                                 version=10, timeout_ms=timeout_ms))


def _answer(conn, timeout=15.0):
    r = sw.parse_produce_response(conn.recv_frame(timeout=timeout), 10)
    return r, time.monotonic()


def test_new_leader_fails_mid_reroute_client_told_with_hint(h):
    cluster, gate, gc = _raw_setup(h)
    c = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(c.close)
    _write(c, 1, 2, b"warm")  # the reroute connection to broker 2 is up
    r, _ = _answer(c)
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(2, 0)], r
    epoch = sl.view_partition(gate, RAW, 2)["epoch"]
    before = sl.scrape(gate)
    cluster.cmd("rtt %d 2000" % OTHER)
    _write(c, 2, 2, b"lost-leader")
    # The leader is to go down mid-reroute; after a fixed pause a loaded (or
    # ASan) epochgate may not have read the write yet.
    harness.wait_until(lambda: sl.scrape(gate).sum("epochgate_reroute_in_flight") >= 1, 10,
                       interval=0.01, what="the reroute to be in flight")
    t0 = time.monotonic()
    cluster.cmd("down %d" % OTHER)
    try:
        r, t1 = _answer(c, timeout=10)
    finally:
        cluster.cmd("up %d" % OTHER)
        cluster.cmd("rtt %d 0" % OTHER)
    after = sl.scrape(gate)
    assert r["correlation_id"] == 2, r
    assert [(p, e, l) for _, p, e, _, l in r["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epoch))], r
    assert t1 - t0 < 1.5, "answered %.2f s after the leader went down" % (t1 - t0)
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="upstream_failed") == 1, \
        after.by(REROUTES, "reason")
    c.send(kw.api_versions_request(3))
    assert kw.frame_correlation_id(c.recv_frame(timeout=5), is_request=False) == 3
    h.note("leader down mid-reroute: NOT_LEADER_OR_FOLLOWER with hint (%d, %d) %.0f ms later"
           % (OTHER, epoch, (t1 - t0) * 1000))


def test_reroute_bound_covers_connecting_to_the_new_leader(h):
    """The pool is cold and broker 2 answers everything (the dial's
    ApiVersions included) 2.5 s late; the write's timeout_ms is 200, so the
    reroute's bound is 1.2 s from the decision, connecting included."""
    cluster, gate, gc = _raw_setup(h)
    c = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(c.close)
    before = sl.scrape(gate)
    cluster.cmd("rtt %d 2500" % OTHER)
    t0 = time.monotonic()
    _write(c, 7, 2, b"cold", timeout_ms=200)
    try:
        r, t1 = _answer(c, timeout=15)
    finally:
        cluster.cmd("rtt %d 0" % OTHER)
    after = sl.scrape(gate)
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(2, sw.NOT_LEADER_OR_FOLLOWER)], r
    assert t1 - t0 < 2.2, "answered %.2f s after the write (bound 1.2 s)" % (t1 - t0)
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="upstream_failed") == 1, \
        after.by(REROUTES, "reason")
    h.note("cold pool, leader 2.5 s to connect, timeout_ms 200: answered in %.0f ms"
           % ((t1 - t0) * 1000))


def test_max_in_flight_one_second_concurrent_reroute_falls_back(h):
    cluster, gate, gc = _raw_setup(h, "reroute:\n  max_in_flight: 1\n")
    a = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(a.close)
    b = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(b.close)
    start = {p: sl.end_offset(cluster, RAW, p) for p in (1, 2)}
    epoch2 = sl.view_partition(gate, RAW, 2)["epoch"]
    before = sl.scrape(gate)
    cluster.cmd("rtt %d 800" % OTHER)
    _write(a, 0xA, 1, b"first")
    # The second write must find the first one holding the only slot; after a
    # fixed pause a loaded (or ASan) epochgate may not have read the first yet.
    harness.wait_until(lambda: sl.scrape(gate).sum("epochgate_reroute_in_flight") >= 1, 10,
                       interval=0.01, what="the first reroute to be in flight")
    _write(b, 0xB, 2, b"second")
    try:
        ra, _ = _answer(a)
        rb, _ = _answer(b)
    finally:
        cluster.cmd("rtt %d 0" % OTHER)
    after = sl.scrape(gate)
    assert [(p, e) for _, p, e, _, _ in ra["partitions"]] == [(1, 0)], ra
    assert [(p, e, l) for _, p, e, _, l in rb["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epoch2))], rb
    assert sl.read_partition(h, cluster, RAW, 1, start=start[1]) == ["first"]
    assert sl.end_offset(cluster, RAW, 2) == start[2]
    assert sl.delta(after, before, REROUTES, result="delivered") == 1
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="max_in_flight") == 1, \
        after.by(REROUTES, "reason")


def test_partition_named_twice_is_not_rerouted(h):
    cluster, gate, gc = _raw_setup(h)
    c = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(c.close)
    start = sl.end_offset(cluster, RAW, 2)
    epoch2 = sl.view_partition(gate, RAW, 2)["epoch"]
    before = sl.scrape(gate)
    c.send(sw.produce_request(0xD, RAW, [(2, kw.record_batch([b"copy-1"])),
                                         (2, kw.record_batch([b"copy-2"]))], acks=1, version=10))
    r, _ = _answer(c)
    after = sl.scrape(gate)
    assert [(p, e, l) for _, p, e, _, l in r["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epoch2))] * 2, r
    assert sl.end_offset(cluster, RAW, 2) == start
    assert sl.delta(after, before, REROUTES, result="fell_back",
                    reason="duplicate_partition") == 2, after.by(REROUTES, "reason")
    assert sl.delta(after, before, REROUTES, result="delivered") == 0


BUDGET = """
limits:
  buffer_budget_bytes: 1MiB
  high_watermark_bytes: 256KiB
  low_watermark_bytes: 128KiB
"""


def test_record_copies_count_against_the_buffer_budget(h):
    cluster, gate, gc = _raw_setup(h, BUDGET)
    c = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(c.close)
    start = sl.end_offset(cluster, RAW, 2)
    epoch2 = sl.view_partition(gate, RAW, 2)["epoch"]
    before = sl.scrape(gate)
    _write(c, 1, 2, b"small")
    small, _ = _answer(c)
    # 700 KB of records: the frame in its buffer fits 1 MiB, the frame
    # plus epochgate's copy of its records does not.
    _write(c, 2, 2, b"x" * (700 * 1024))
    big, _ = _answer(c)
    after = sl.scrape(gate)
    assert [(p, e) for _, p, e, _, _ in small["partitions"]] == [(2, 0)], small
    assert [(p, e, l) for _, p, e, _, l in big["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epoch2))], big
    assert sl.read_partition(h, cluster, RAW, 2, start=start) == ["small"]
    assert sl.delta(after, before, REROUTES, result="delivered") == 1
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="buffer_budget") == 1, \
        after.by(REROUTES, "reason")


if __name__ == "__main__":
    harness.main(globals())
