"""Rerouting (docs/rerouting.md), epochgate's own decision: a Produce
partition sent to the listener of a broker that epochgate's view says is no
longer its leader is delivered to the leader by epochgate, on a topic whose
rule has `reroute: true`. With raw frames on the listener of broker 1 while
partition 2 is led by broker 2:

- a split request (p0, p1 led here, p2 elsewhere) gets one response in the
  request's partition order, every partition written (read back from the
  cluster directly), p2 by its leader, with no error and no hint;
- a request whose partitions are all led elsewhere never reaches broker 1 and
  is answered by the leader;
- acks=0 for a partition led elsewhere is written at its leader and the
  connection stays open;
- observe mode forwards the request unchanged (the broker answers it) and
  only counts what it would have rerouted; a topic without `reroute` keeps
  today's NOT_LEADER_OR_FOLLOWER plus hint (`off`).
"""

import os
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "rr"
PLAIN = "plain"
HERE_BROKER = 1
OTHER = 2
REROUTES = "epochgate_reroutes_total"

def _setup(h, mode="enforce", extra=""):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC, "%s:3:3" % PLAIN])
    for t in (TOPIC, PLAIN):
        for p, b in ((0, HERE_BROKER), (1, HERE_BROKER), (2, OTHER)):
            cluster.cmd("leader %s %d %d" % (t, p, b))
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(TOPIC, mode, extra=extra))
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC, PLAIN])
    for t in (TOPIC, PLAIN):
        parts = md["topics"][t]["partitions"]
        assert [parts[p]["leader"] for p in range(3)] == [HERE_BROKER, HERE_BROKER, OTHER], parts
        for p in range(3):
            sl.wait_view(gate, t, p, parts[p]["leader"], parts[p]["leader_epoch"])
    cluster.cmd("track start")
    return cluster, gate, gc


def _ends(cluster, topic=TOPIC):
    return {p: sl.end_offset(cluster, topic, p) for p in range(3)}


def test_split_request_rerouted_partition_written_by_its_leader(h):
    cluster, gate, gc = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    values = {p: [b"rr-%d-%d" % (p, i) for i in range(3)] for p in range(3)}
    corr = 0x5EED5
    frame = sw.produce_request(corr, TOPIC, [(p, kw.record_batch(values[p])) for p in (0, 1, 2)],
                               acks=-1, version=10)
    r = sw.parse_produce_response(gc.exchange(frame, node=HERE_BROKER), 10)
    after = sl.scrape(gate)
    assert r["correlation_id"] == corr, r
    assert [(t, p) for t, p, _, _, _ in r["partitions"]] == [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)], r
    epoch2 = sl.view_partition(gate, TOPIC, 2)["epoch"]
    for _, p, err, base, leader in r["partitions"]:
        assert err == 0 and base == before_ends[p], (p, err, base, before_ends)
        # The rerouted partition also names its leader (KIP-951 CurrentLeader,
        # which librdkafka applies on success too), so the client moves there.
        want = (OTHER, epoch2) if p == 2 else None
        assert leader == want, "hint on partition %d: %s" % (p, r["partitions"])
    upstream_ports = set(cluster.ports)
    assert not {port for _, port, _ in r["node_endpoints"].values()} & upstream_ports, r
    assert r["node_endpoints"][OTHER][:2] == tuple(gc.brokers[OTHER]), (r, gc.brokers)
    for p in range(3):
        got = sl.read_partition(h, cluster, TOPIC, p, start=before_ends[p])
        assert got == [v.decode() for v in values[p]], (p, got)
    assert sl.track_count(cluster, HERE_BROKER, kw.API_PRODUCE) == 1, cluster.cmd("track dump")
    assert sl.track_count(cluster, OTHER, kw.API_PRODUCE) == 1, cluster.cmd("track dump")
    assert sl.delta(after, before, REROUTES, result="delivered") == 1, after.by(REROUTES, "reason")

    # All partitions led elsewhere: broker 1 never sees it, the leader answers.
    before = sl.scrape(gate)
    r_all = sw.parse_produce_response(gc.exchange(sw.produce_request(
        corr + 1, TOPIC, [(2, kw.record_batch([b"all-stale"]))], acks=1, version=9),
        node=HERE_BROKER), 9)
    after = sl.scrape(gate)
    assert [(p, e, b) for _, p, e, b, _ in r_all["partitions"]] == [
        (2, 0, before_ends[2] + 3)], r_all
    assert sl.read_partition(h, cluster, TOPIC, 2, start=before_ends[2] + 3) == ["all-stale"]
    assert sl.track_count(cluster, HERE_BROKER, kw.API_PRODUCE) == 1, cluster.cmd("track dump")
    assert sl.delta(after, before, REROUTES, result="delivered") == 1

    # A topic without `reroute`: today's answer (reason off is not counted in enforce mode).
    r_plain = sw.parse_produce_response(gc.exchange(sw.produce_request(
        corr + 2, PLAIN, [(2, kw.record_batch([b"plain"]))], acks=1, version=10),
        node=HERE_BROKER), 10)
    assert [(p, e) for _, p, e, _, _ in r_plain["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER)], r_plain
    assert sl.end_offset(cluster, PLAIN, 2) == 0
    h.note("Produce v10 [p0,p1 -> broker %d, p2 led by %d] on a reroute topic: one response "
           "(order 0,1,2), all three written (read back directly), p2 by broker %d"
           % (HERE_BROKER, OTHER, OTHER))


def test_acks0_to_stale_leader_written_at_leader_connection_stays(h):
    cluster, gate, gc = _setup(h)
    before_ends = _ends(cluster)
    conn = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(conn.close)
    conn.send(sw.produce_request(77, TOPIC, [(2, kw.record_batch([b"acks0-stale"]))], acks=0,
                                 version=10) + kw.api_versions_request(78))
    assert kw.frame_correlation_id(conn.recv_frame(), is_request=False) == 78
    harness.wait_until(lambda: sl.end_offset(cluster, TOPIC, 2) == before_ends[2] + 1, 5,
                       what="the acks=0 record to be written at the leader")
    assert sl.read_partition(h, cluster, TOPIC, 2, start=before_ends[2]) == ["acks0-stale"]
    assert sl.track_count(cluster, HERE_BROKER, kw.API_PRODUCE) == 0


def test_observe_mode_forwards_unchanged_and_counts(h):
    cluster, gate, gc = _setup(h, mode="observe")
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    r = sw.parse_produce_response(gc.exchange(sw.produce_request(
        0x0B5, TOPIC, [(2, kw.record_batch([b"observed"]))], acks=1, version=10),
        node=HERE_BROKER), 10)
    after = sl.scrape(gate)
    # The broker itself answered (it does not lead p2), nothing was rerouted.
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(2, sw.NOT_LEADER_OR_FOLLOWER)], r
    assert sl.track_count(cluster, HERE_BROKER, kw.API_PRODUCE) == 1
    assert sl.track_count(cluster, OTHER, kw.API_PRODUCE) == 0
    assert sl.end_offset(cluster, TOPIC, 2) == before_ends[2]
    assert sl.delta(after, before, REROUTES, result="observed") == 1, after.by(REROUTES, "result")
    assert sl.delta(after, before, REROUTES, result="delivered") == 0


def _recv_produce(conn, version, timeout=10.0):
    r = sw.parse_produce_response(conn.recv_frame(timeout=timeout), version)
    return r, time.monotonic()


def test_order_hazard_earlier_write_in_flight_falls_back(h):
    """Write A of a stream is on its way to the old leader (slow to answer)
    when epochgate's view learns the move; write B of the same stream then
    must not overtake it on epochgate's own connection: B is held for it,
    at most reroute.max_hold_ms (100 ms; A takes 5 s), then falls back
    (NOT_LEADER_OR_FOLLOWER plus hint, the client resends it after A).
    scenario.reroute_old_clients has the hold that ends in time."""
    cluster, gate, gc = _setup(h)
    # Both sessions up before broker 1 turns slow: a probe still unanswered
    # then would hold A for the 5 s too.
    x = gc.ready_conn(HERE_BROKER)
    gc.ready_conn(OTHER)
    start = sl.end_offset(cluster, TOPIC, 0)
    before = sl.scrape(gate)
    # The epoch the move makes, read before broker 1 turns slow (the mock's
    # partition query would wait for its answers).
    epoch = cluster.partition(TOPIC, 0)["leader_epoch"] + 1
    cluster.cmd("rtt %d 5000" % HERE_BROKER)
    x.send(sw.produce_request(0xA, TOPIC, [(0, kw.record_batch([b"A"]))], acks=1, version=10))
    # A reached broker 1, which took it as leader (its answer takes 5 s).
    harness.wait_until(lambda: sl.track_count(cluster, HERE_BROKER, kw.API_PRODUCE) == 1, 5,
                       interval=0.01, what="broker 1 to receive A")
    # Then the move, and a client's Metadata (v12: ids and epochs) through
    # the new leader's listener teaches the view the cluster's own state.
    # Not a pushed one-shot answer: epochgate's own refresh (the urgent one
    # _setup's Metadata v7 asks for, to broker 1, 5 s slow now) could take it,
    # and the view would then learn the move only when A is answered too,
    # and B, finding nothing in flight, would be rerouted.
    cluster.cmd("leader %s 0 %d" % (TOPIC, OTHER))
    md = gc.metadata_v12([TOPIC], node=OTHER)["topics"][TOPIC]["partitions"][0]
    assert (md["leader"], md["leader_epoch"]) == (OTHER, epoch), md
    sl.wait_view(gate, TOPIC, 0, OTHER, epoch)
    x.send(sw.produce_request(0xB, TOPIC, [(0, kw.record_batch([b"B"]))], acks=1, version=10))
    # B is decided while A is unanswered (hold_timeout counts only that):
    # held, then it falls back.
    harness.wait_until(lambda: sl.delta(sl.scrape(gate), before, REROUTES, result="fell_back",
                                        reason="hold_timeout") == 1, 4, interval=0.01,
                       what="B to fall back after its hold, A still unanswered")
    ra, _ = _recv_produce(x, 10)
    rb, _ = _recv_produce(x, 10)
    cluster.cmd("rtt %d 0" % HERE_BROKER)
    after = sl.scrape(gate)
    assert (ra["correlation_id"], rb["correlation_id"]) == (0xA, 0xB), (ra, rb)
    assert [(p, e) for _, p, e, _, _ in ra["partitions"]] == [(0, 0)], ra
    assert [(p, e, l) for _, p, e, _, l in rb["partitions"]] == [
        (0, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epoch))], rb
    assert sl.read_partition(h, cluster, TOPIC, 0, start=start) == ["A"]
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="hold_timeout") == 1, \
        after.by(REROUTES, "reason")
    assert sl.delta(after, before, "epochgate_reroute_held_total") == 1
    assert sl.delta(after, before, REROUTES, result="delivered") == 0


def test_order_hazard_direct_write_to_new_leader_waits_for_rerouted_one(h):
    """The order hazard provoked on purpose: write A is rerouted to the new
    leader (which is slow: epochgate's connection to it is new and every
    answer takes 800 ms), and the client, having learned the move itself,
    sends write C of the same stream straight to the new leader's listener
    on another connection. C must not be stored before A: epochgate holds C
    until A is answered. The partition read back has A, then C."""
    cluster, gate, gc = _setup(h)
    x = gc.conn(HERE_BROKER)
    y = gc.conn(OTHER)
    gc.metadata([], node=OTHER)  # y's session is open and answered
    sl.move_view_first(cluster, gc, TOPIC, 0, OTHER)
    start = sl.end_offset(cluster, TOPIC, 0)
    before = sl.scrape(gate)
    cluster.cmd("rtt %d 800" % OTHER)
    x.send(sw.produce_request(0xA, TOPIC, [(0, kw.record_batch([b"A"]))], acks=1, version=10))
    # C is to arrive while A's reroute is in flight; a fixed pause can end
    # before a loaded (or ASan) epochgate has even read A, and then C goes first.
    harness.wait_until(lambda: sl.scrape(gate).sum("epochgate_reroute_in_flight") >= 1, 10,
                       interval=0.01, what="A's reroute to be in flight")
    y.send(sw.produce_request(0xC, TOPIC, [(0, kw.record_batch([b"C"]))], acks=1, version=10))
    ra, ta = _recv_produce(x, 10)
    rc, tc = _recv_produce(y, 10)
    cluster.cmd("rtt %d 0" % OTHER)
    after = sl.scrape(gate)
    (_, _, ea, ba, _), = ra["partitions"]
    (_, _, ec, bc, _), = rc["partitions"]
    assert ea == 0 and ec == 0, (ra, rc)
    assert ba < bc, "C (offset %d) was stored before the rerouted A (offset %d)" % (bc, ba)
    assert sl.read_partition(h, cluster, TOPIC, 0, start=start) == ["A", "C"]
    assert sl.delta(after, before, REROUTES, result="delivered") == 1, after.by(REROUTES, "reason")
    assert sl.delta(after, before, "epochgate_reroute_held_total") == 1
    h.note("order hazard: rerouted A at offset %d, direct C held and stored after it at %d "
           "(C answered %.0f ms after A)" % (ba, bc, (tc - ta) * 1000))


def _broker_says_not_leader(h, version, config_extra=""):
    """The leader of p0 moves 1 -> 2 without epochgate knowing; a Produce to
    broker 1's listener is forwarded there and broker 1 answers
    NOT_LEADER_OR_FOLLOWER (with a KIP-951 hint from v10)."""
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    cluster.cmd("leader %s 0 %d" % (TOPIC, HERE_BROKER))
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(TOPIC, extra=config_extra))
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC])
    p0 = md["topics"][TOPIC]["partitions"][0]
    sl.wait_view(gate, TOPIC, 0, HERE_BROKER, p0["leader_epoch"])
    gc.conn(HERE_BROKER)
    cluster.cmd("leader %s 0 %d" % (TOPIC, OTHER))
    start = sl.end_offset(cluster, TOPIC, 0)
    before = sl.scrape(gate)
    r = sw.parse_produce_response(gc.exchange(sw.produce_request(
        0x2, TOPIC, [(0, kw.record_batch([b"in-flight"]))], acks=1, version=version),
        node=HERE_BROKER), version)
    after = sl.scrape(gate)
    return cluster, gate, r, start, before, after


def test_broker_not_leader_rerouted_to_the_leader_its_hint_names(h):
    cluster, gate, r, start, before, after = _broker_says_not_leader(h, 10)
    assert [(p, e, b) for _, p, e, b, _ in r["partitions"]] == [(0, 0, start)], r
    assert sl.read_partition(h, cluster, TOPIC, 0, start=start) == ["in-flight"]
    assert sl.delta(after, before, REROUTES, result="delivered") == 1, after.by(REROUTES, "reason")


def test_broker_not_leader_without_hint_waits_for_a_refresh_then_reroutes(h):
    cluster, gate, r, start, before, after = _broker_says_not_leader(
        h, 8, "reroute:\n  max_wait_ms: 1000\n")
    assert [(p, e, b) for _, p, e, b, _ in r["partitions"]] == [(0, 0, start)], (
        r, after.by(REROUTES, "reason"))
    assert sl.read_partition(h, cluster, TOPIC, 0, start=start) == ["in-flight"]
    assert sl.delta(after, before, REROUTES, result="delivered") == 1, after.by(REROUTES, "reason")


def test_broker_not_leader_passes_through_with_max_wait_0(h):
    cluster, gate, r, start, before, after = _broker_says_not_leader(
        h, 8, "reroute:\n  max_wait_ms: 0\n")
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(0, sw.NOT_LEADER_OR_FOLLOWER)], r
    assert sl.end_offset(cluster, TOPIC, 0) == start
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="no_leader") == 1, \
        after.by(REROUTES, "reason")


def test_rerouted_writes_never_wait_for_a_refresh_however_old_the_view_entry(h):
    """A producer whose writes are rerouted is never told of the move, so it
    keeps writing to the old listener long after the view entry changed.
    Those writes go to the leader at once: no hold for a refresh first (here
    every entry counts as old: refresh_before_fence_ms 0)."""
    cluster, gate, gc = _setup(h, extra="  refresh_before_fence_ms: 0\n")
    start = sl.end_offset(cluster, TOPIC, 2)
    before = sl.scrape(gate)
    for i in range(20):
        r = sw.parse_produce_response(gc.exchange(sw.produce_request(
            0x100 + i, TOPIC, [(2, kw.record_batch([b"w%d" % i]))], acks=1, version=10),
            node=HERE_BROKER), 10)
        assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(2, 0)], r
    after = sl.scrape(gate)
    assert sl.read_partition(h, cluster, TOPIC, 2, start=start) == ["w%d" % i for i in range(20)]
    assert sl.delta(after, before, REROUTES, result="delivered") == 20
    assert sl.delta(after, before, "epochgate_metadata_refreshes_total", trigger="urgent") == 0, \
        after.by("epochgate_metadata_refreshes_total", "trigger")


def test_connection_whose_in_flight_limit_reroutes_filled_reads_again(h):
    """Every request the client has in flight is a reroute (the new leader is
    slow), so the connection reaches limits.max_in_flight_per_connection and
    epochgate stops reading it. The answers then complete from the
    rerouter's callbacks, not from the client's own upstream, and reading
    must resume there: the next request is answered."""
    cluster, gate, gc = _setup(h, extra="limits:\n  max_in_flight_per_connection: 5\n")
    start = sl.end_offset(cluster, TOPIC, 2)
    c = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(c.close)
    cluster.cmd("rtt %d 300" % OTHER)
    c.send(b"".join(sw.produce_request(i, TOPIC, [(2, kw.record_batch([b"l%d" % i]))], acks=1,
                                       version=10) for i in range(5)))
    got = [sw.parse_produce_response(c.recv_frame(timeout=10), 10) for _ in range(5)]
    cluster.cmd("rtt %d 0" % OTHER)
    assert [r["correlation_id"] for r in got] == list(range(5)), got
    assert all(e == 0 for r in got for _, _, e, _, _ in r["partitions"]), got
    c.send(kw.api_versions_request(0x99))
    assert kw.frame_correlation_id(c.recv_frame(timeout=5), is_request=False) == 0x99
    assert sl.read_partition(h, cluster, TOPIC, 2, start=start) == ["l%d" % i for i in range(5)]


def test_shutdown_waits_for_a_reroute_in_flight_not_for_the_drain_timeout(h):
    """SIGTERM while a rerouted write is in flight: the client gets the
    leader's answer, and epochgate exits once it is written, not after
    shutdown's drain timeout (30 s)."""
    import signal
    cluster, gate, gc = _setup(h)
    x = gc.conn(HERE_BROKER)
    sw.parse_produce_response(gc.exchange(sw.produce_request(
        1, TOPIC, [(2, kw.record_batch([b"warm"]))], acks=1, version=10), node=HERE_BROKER), 10)
    cluster.cmd("rtt %d 1500" % OTHER)
    x.send(sw.produce_request(0xB, TOPIC, [(2, kw.record_batch([b"d"]))], acks=1, version=10))
    # SIGTERM must find the reroute in flight; a fixed pause can end before a
    # loaded (or ASan) epochgate has read the write.
    harness.wait_until(lambda: sl.scrape(gate).sum("epochgate_reroute_in_flight") >= 1, 10,
                       interval=0.01, what="the reroute to be in flight")
    t0 = time.monotonic()
    os.kill(gate.proc.proc.pid, signal.SIGTERM)
    r = sw.parse_produce_response(x.recv_frame(timeout=10), 10)
    assert r["correlation_id"] == 0xB and [e for _, _, e, _, _ in r["partitions"]] == [0], r
    gate.proc.proc.wait(timeout=10)
    took = time.monotonic() - t0
    assert took < 8, "epochgate took %.1f s to exit after SIGTERM" % took
    h.note("answered and exited %.0f ms after SIGTERM" % (took * 1000))


def test_acks0_with_an_unreadable_batch_is_not_rerouted(h):
    """acks=0 has no answer to carry an error, so a batch whose header does
    not read must not reach the leader on epochgate's shared connection:
    the client is closed as without rerouting, nothing is written, and the
    reroute connection stays good for the next client."""
    cluster, gate, gc = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    conn = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(conn.close)
    conn.send(sw.produce_request(91, TOPIC, [(2, b"\x00\x01\x02\x03\x04")], acks=0, version=10))
    assert sl.port_closed_by_peer(conn, timeout=5), "bytes arrived for an acks=0 Produce"
    after = sl.scrape(gate)
    assert sl.delta(after, before, REROUTES, result="fell_back", reason="batch_unreadable") == 1, \
        after.by(REROUTES, "reason")
    assert sl.delta(after, before, REROUTES, result="delivered") == 0
    assert _ends(cluster) == before_ends
    r = sw.parse_produce_response(gc.exchange(sw.produce_request(
        92, TOPIC, [(2, kw.record_batch([b"after"]))], acks=1, version=10), node=HERE_BROKER), 10)
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(2, 0)], r
    assert sl.read_partition(h, cluster, TOPIC, 2, start=before_ends[2]) == ["after"]


def _connections_to(pid, port):
    """Established TCP connections of process `pid` to remote `port` on
    loopback, read from /proc (the kernel's view, not epochgate's)."""
    inodes = set()
    fd_dir = "/proc/%d/fd" % pid
    for fd in os.listdir(fd_dir):
        try:
            link = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if cols[3] == "01" and cols[9] in inodes and int(cols[2].rsplit(":", 1)[1], 16) == port:
                    n += 1
    return n


def test_acks0_reroute_never_fails_another_clients_acks1_reroute(h):
    """Two independent clients, both writing to the listener of a broker that
    no longer leads p2: A with acks=0, B with acks=1. Both are rerouted to
    the same leader on a cold pool (its answers slowed so that both are
    queued before either is answered). The mock answers A's acks=0 Produce
    (a broker would not, and closes the connection after an error on one):
    that answer must be dropped, and B must still get the leader's success,
    not NOT_LEADER_OR_FOLLOWER from a connection that was failed under it."""
    cluster, gate, gc = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    leader_port = cluster.broker_address(OTHER)[1]
    conns_before = _connections_to(gate.proc.proc.pid, leader_port)
    a = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(a.close)
    b = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(b.close)
    cluster.cmd("rtt %d 300" % OTHER)
    a.send(sw.produce_request(0xA0, TOPIC, [(2, kw.record_batch([b"acks0"]))], acks=0,
                              version=10))
    time.sleep(0.05)
    b.send(sw.produce_request(0xB1, TOPIC, [(2, kw.record_batch([b"acks1"]))], acks=1,
                              version=10))
    rb = sw.parse_produce_response(b.recv_frame(timeout=10), 10)
    harness.wait_until(lambda: sl.end_offset(cluster, TOPIC, 2) == before_ends[2] + 2, 5,
                       what="both records to be written at the leader")
    harness.wait_until(lambda: sl.delta(sl.scrape(gate), before,
                                        "epochgate_reroute_acks0_answers_total") == 1, 5,
                       what="the mock's answer to the acks=0 post to be counted")
    cluster.cmd("rtt %d 0" % OTHER)
    after = sl.scrape(gate)
    assert [(p, e) for _, p, e, _, _ in rb["partitions"]] == [(2, 0)], (
        rb, after.by(REROUTES, "reason"))
    assert sorted(sl.read_partition(h, cluster, TOPIC, 2, start=before_ends[2])) == [
        "acks0", "acks1"]
    assert sl.delta(after, before, REROUTES, result="delivered") == 2, after.by(REROUTES, "reason")
    assert sl.delta(after, before, REROUTES, result="fell_back") == 0, after.by(REROUTES, "reason")
    # The two reroutes reached the leader on two new connections of
    # epochgate's (acks=0 posts never share the acks>=1 one).
    assert _connections_to(gate.proc.proc.pid, leader_port) - conns_before == 2
    # A's connection is still open (nothing was closed for the acks=0 write).
    a.send(kw.api_versions_request(0xA1))
    assert kw.frame_correlation_id(a.recv_frame(timeout=5), is_request=False) == 0xA1
    h.note("acks=0 and acks=1 reroutes to one leader: B answered %s, the mock's acks=0 answer "
           "dropped and counted" % rb["partitions"])


def test_acks0_reroute_counted_delivered_only_once_written(h):
    """An acks=0 write rerouted to a leader that cannot be reached (down:
    the cold pool's dial is refused) was never written: it is counted
    upstream_failed, not delivered, and the leader stores nothing."""
    cluster, gate, gc = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    cluster.cmd("down %d" % OTHER)
    try:
        conn = sl.connect(gc.brokers[HERE_BROKER])
        h.on_close(conn.close)
        conn.send(sw.produce_request(81, TOPIC, [(2, kw.record_batch([b"nowhere"]))], acks=0,
                                     version=10))
        harness.wait_until(lambda: sl.delta(sl.scrape(gate), before, REROUTES, result="fell_back",
                                            reason="upstream_failed") == 1, 15,
                           what="the unwritten acks=0 reroute to be counted upstream_failed")
        after = sl.scrape(gate)
    finally:
        cluster.cmd("up %d" % OTHER)
    assert sl.delta(after, before, REROUTES, result="delivered") == 0, after.by(REROUTES, "reason")
    assert _ends(cluster) == before_ends


if __name__ == "__main__":
    harness.main(globals())
