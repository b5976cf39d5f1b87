"""A drain (SIGTERM) carries a write held for order to its answer
(docs/rerouting.md, "Order, per producer and partition", and "Draining").

A write to the old leader's listener, just after the leader moved, is
refused by the old leader (NOT_LEADER_OR_FOLLOWER, slowed by the mock's
round trip) and rerouted; the next write of the same producer and partition,
on the same connection or sent straight to the new leader, is held until
then, its bytes accepted from the client but not forwarded. SIGTERM arrives while it is held: epochgate stops
reading new requests, but the held write was accepted before the drain, so
it goes on as it would have, the client gets both answers (error 0) in
order and then its connection closes, and the partition read back straight
from the mock broker holds both records once, in the order sent. Before,
the connection closed as soon as nothing was in flight and the held write
was never answered.
"""

import os
import signal
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "old"
HELD = "epochgate_reroute_held_total"
CONFIG = sl.reroute_config(TOPIC, extra="reroute:\n  max_hold_ms: 1000\n")


def _sigterm_while_held(h, b_node):
    """A to the old leader's listener just after the move (refused 700 ms
    late, then rerouted); the view learns the move; B (same producer and
    partition) to `b_node`'s listener is held behind A; then SIGTERM."""
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    cluster.cmd("leader %s 0 1" % TOPIC)
    gate = sl.start_gate(h, cluster, config=CONFIG)
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC])
    epoch = md["topics"][TOPIC]["partitions"][0]["leader_epoch"]
    sl.wait_view(gate, TOPIC, 0, 1, epoch)
    a_conn = gc.conn(1)
    b_conn = gc.conn(b_node)
    start = sl.end_offset(cluster, TOPIC, 0)
    cluster.cmd("rtt 1 700")
    cluster.move_leader(TOPIC, 0, 2)
    a_conn.send(sw.produce_request(7001, TOPIC, [(0, kw.record_batch([b"A"]))], acks=1,
                                   version=10))
    gc.metadata([TOPIC], node=2)
    sl.wait_view(gate, TOPIC, 0, 2, epoch + 1)
    before = sl.scrape(gate)
    b_conn.send(sw.produce_request(7002, TOPIC, [(0, kw.record_batch([b"B"]))], acks=1,
                                   version=10))
    # B is held behind A (still at the old leader) before the signal.
    deadline = time.monotonic() + 5
    while sl.delta(sl.scrape(gate), before, HELD) < 1:
        assert time.monotonic() < deadline, "B was never held for order"
        time.sleep(0.02)
    t0 = time.monotonic()
    os.kill(gate.proc.proc.pid, signal.SIGTERM)
    answers = []
    for conn in (a_conn, b_conn) if b_conn is not a_conn else (a_conn, a_conn):
        r = sw.parse_produce_response(conn.recv_frame(timeout=10), 10)
        answers.append((r["correlation_id"], [p[2] for p in r["partitions"]]))
    answered_s = time.monotonic() - t0
    # Only then does the drain close the connections.
    for conn in {id(a_conn): a_conn, id(b_conn): b_conn}.values():
        assert sl.port_closed_by_peer(conn, timeout=10), "bytes after the answers"
    rc = gate.proc.proc.wait(timeout=20)
    took = time.monotonic() - t0
    got = sl.read_partition(h, cluster, TOPIC, 0, start=start, timeout=15)
    h.note("B to node %d: answers %s %.0f ms after SIGTERM; exit %s after %.0f ms; stored %s"
           % (b_node, answers, answered_s * 1e3, rc, took * 1e3, got))
    assert answers == [(7001, [0]), (7002, [0])], answers
    assert got == ["A", "B"], "stored %s" % got
    assert rc == 0, rc
    # The drain ended with the answers, not at shutdown's drain timeout (30 s).
    assert took < 8, "epochgate took %.1f s to exit after SIGTERM" % took


def test_sigterm_carries_a_write_held_behind_one_on_its_connection(h):
    """B waits behind A on the same connection (A in flight there)."""
    _sigterm_while_held(h, 1)


def test_sigterm_carries_a_write_held_behind_one_on_another_connection(h):
    """B, sent straight to the new leader, waits behind A at the old one:
    B's connection has nothing in flight while B is held, so the drain would
    close it at once."""
    _sigterm_while_held(h, 2)


if __name__ == "__main__":
    harness.main(globals())
