"""Partial fencing and acks=0 Produce, with raw Produce frames on the listener of
one broker:

5. Partial fencing: one Produce for 3 partitions of which 1 is led by
   another broker gets one merged response with the client's correlation id
   and the request's partition order; the 2 good partitions are written by
   the broker (read back from the cluster), the stale one is answered by
   epochgate with NOT_LEADER_OR_FOLLOWER and a hint (Produce v10) naming the
   real leader at epochgate's address, and is not written. A request whose
   partitions are all stale never reaches the broker (the mock cluster's
   request tracking counts what each broker received).
6. acks=0 to a stale leader: epochgate closes the connection without
   sending a byte, as a broker does, and nothing is written; with good and
   stale partitions mixed, the good ones are forwarded and written first.
"""


from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "split"
HERE_BROKER = 1   # the listener the client talks to
OTHER = 2         # leads partition 2


def _setup(h):
    """Partitions 0 and 1 led by broker 1, partition 2 by broker 2, and
    epochgate's view knowing it. Returns (cluster, gate, gc, epochs)."""
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    for p, b in ((0, HERE_BROKER), (1, HERE_BROKER), (2, OTHER)):
        cluster.cmd("leader %s %d %d" % (TOPIC, p, b))
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC])
    parts = md["topics"][TOPIC]["partitions"]
    assert [parts[p]["leader"] for p in range(3)] == [HERE_BROKER, HERE_BROKER, OTHER], parts
    epochs = {p: parts[p]["leader_epoch"] for p in range(3)}
    for p in range(3):
        sl.wait_view(gate, TOPIC, p, parts[p]["leader"], epochs[p])
    cluster.cmd("track start")
    return cluster, gate, gc, epochs


def _tracked(cluster, broker, api):
    for item in cluster.cmd("track dump").split()[1:]:
        key, _, n = item.partition("=")
        b, _, a = key.partition(":")
        if int(b) == broker and int(a) == api:
            return int(n)
    return 0


def _ends(cluster):
    return {p: sl.end_offset(cluster, TOPIC, p) for p in range(3)}


def test_produce_split_merged_response_two_written_one_hinted(h):
    cluster, gate, gc, epochs = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    values = {p: [b"split-%d-%d" % (p, i) for i in range(3)] for p in range(3)}
    corr = 0x5EED5
    frame = sw.produce_request(corr, TOPIC, [(p, kw.record_batch(values[p])) for p in (0, 1, 2)],
                               acks=-1, version=10)
    r = sw.parse_produce_response(gc.exchange(frame, node=HERE_BROKER), 10)
    after = sl.scrape(gate)
    assert r["correlation_id"] == corr, r
    assert [(t, p) for t, p, _, _, _ in r["partitions"]] == [(TOPIC, 0), (TOPIC, 1), (TOPIC, 2)], (
        "partition order of the merged response: %s" % r["partitions"])
    by_p = {p: (err, base, leader) for _, p, err, base, leader in r["partitions"]}
    for p in (0, 1):
        assert by_p[p][0] == 0 and by_p[p][1] == before_ends[p], (p, by_p[p], before_ends)
        assert by_p[p][2] is None, "a hint on a written partition: %s" % (by_p[p],)
    err, base, leader = by_p[2]
    assert err == sw.NOT_LEADER_OR_FOLLOWER and base == -1, by_p[2]
    assert leader == (OTHER, epochs[2]), "hint %s, expected leader %d epoch %d" % (
        leader, OTHER, epochs[2])
    gc.metadata([])  # epochgate's listener addresses, as a client sees them
    assert r["node_endpoints"].get(OTHER, (None, None))[:2] == gc.brokers[OTHER], (
        r["node_endpoints"], gc.brokers)
    upstream_ports = set(cluster.ports)
    assert not {port for _, port, _ in r["node_endpoints"].values()} & upstream_ports
    # The broker wrote partitions 0 and 1 and received exactly one Produce.
    for p in (0, 1):
        got = sl.read_partition(h, cluster, TOPIC, p, start=before_ends[p])
        assert got == [v.decode() for v in values[p]], (p, got)
    assert sl.end_offset(cluster, TOPIC, 2) == before_ends[2], "partition 2 was written"
    assert _tracked(cluster, HERE_BROKER, kw.API_PRODUCE) == 1
    assert sl.delta(after, before, sl.FENCED, api="produce", reason="not_leader",
                    mode="enforce") == 1, sl.fences_text(after)
    assert sl.delta(after, before, sl.HINTS, source="synthesized") == 1, sl.fences_text(after)

    # The same split at Produce v8 (no hint fields): the stale partition is
    # answered NOT_LEADER_OR_FOLLOWER without a hint.
    r8 = sw.parse_produce_response(gc.exchange(sw.produce_request(
        corr + 1, TOPIC, [(p, kw.record_batch([b"v8-%d" % p])) for p in (2, 0)], acks=1,
        version=8), node=HERE_BROKER), 8)
    assert [(p, e) for _, p, e, _, _ in r8["partitions"]] == [(2, sw.NOT_LEADER_OR_FOLLOWER),
                                                              (0, 0)], r8

    # All partitions stale: answered without going upstream.
    before = sl.scrape(gate)
    r_all = sw.parse_produce_response(gc.exchange(sw.produce_request(
        corr + 2, TOPIC, [(2, kw.record_batch([b"never"]))], acks=-1, version=10),
        node=HERE_BROKER), 10)
    after = sl.scrape(gate)
    assert r_all["correlation_id"] == corr + 2
    assert [(p, e, l) for _, p, e, _, l in r_all["partitions"]] == [
        (2, sw.NOT_LEADER_OR_FOLLOWER, (OTHER, epochs[2]))], r_all
    assert _tracked(cluster, HERE_BROKER, kw.API_PRODUCE) == 2, cluster.cmd("track dump")
    assert sl.end_offset(cluster, TOPIC, 2) == before_ends[2]
    assert sl.delta(after, before, sl.FENCED, api="produce") == 1
    h.note("Produce v10 [p0,p1 -> broker %d, p2 led by %d]: one response (corr %#x, order "
           "0,1,2), p0/p1 written at offsets %d/%d, p2 NOT_LEADER_OR_FOLLOWER with hint "
           "leader %d epoch %d at %s:%d; an all-stale request never reached the broker"
           % (HERE_BROKER, OTHER, corr, before_ends[0], before_ends[1], OTHER, epochs[2],
              gc.brokers[OTHER][0], gc.brokers[OTHER][1]))


def test_acks0_to_stale_leader_closes_connection_without_response(h):
    cluster, gate, gc, epochs = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    conn = sl.connect(gc.brokers[HERE_BROKER] if gc.brokers else None)
    h.on_close(conn.close)
    conn.send(sw.produce_request(77, TOPIC, [(2, kw.record_batch([b"acks0-stale"]))], acks=0,
                                 version=10))
    assert sl.port_closed_by_peer(conn, timeout=5), "bytes arrived for an acks=0 Produce"
    after = sl.scrape(gate)
    assert sl.delta(after, before, "epochgate_connections_closed_total",
                    reason="fenced_acks0") == 1, after.by("epochgate_connections_closed_total",
                                                          "reason")
    assert sl.delta(after, before, sl.FENCED, api="produce", reason="not_leader") == 1
    assert sl.delta(after, before, sl.HINTS) == 0
    assert _tracked(cluster, HERE_BROKER, kw.API_PRODUCE) == 0
    assert sl.end_offset(cluster, TOPIC, 2) == before_ends[2]

    # The same listener keeps serving new connections, and acks=0 to the real
    # leader is forwarded (written, still no response).
    conn2 = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(conn2.close)
    conn2.send(sw.produce_request(78, TOPIC, [(0, kw.record_batch([b"acks0-good"]))], acks=0,
                                  version=10) + kw.api_versions_request(79))
    assert kw.frame_correlation_id(conn2.recv_frame(), is_request=False) == 79
    harness.wait_until(lambda: sl.end_offset(cluster, TOPIC, 0) == before_ends[0] + 1, 5,
                       what="the good acks=0 record to be written")

    h.note("acks=0 Produce for a partition led elsewhere: connection closed with 0 bytes, "
           "connections_closed_total{reason=fenced_acks0} +1, nothing written")


def test_acks0_mixed_forwards_good_partitions_then_closes(h):
    """A broker appends the partitions it leads from an acks=0 Produce and
    then closes the connection for the others: epochgate forwards the good
    partitions (the request rewritten without the stale one), then closes,
    and never answers."""
    cluster, gate, gc, epochs = _setup(h)
    before_ends = _ends(cluster)
    before = sl.scrape(gate)
    conn = sl.connect(gc.brokers[HERE_BROKER])
    h.on_close(conn.close)
    conn.send(sw.produce_request(80, TOPIC, [(0, kw.record_batch([b"acks0-mixed-0"])),
                                             (2, kw.record_batch([b"acks0-mixed-2"])),
                                             (1, kw.record_batch([b"acks0-mixed-1"]))],
                                 acks=0, version=10))
    assert sl.port_closed_by_peer(conn, timeout=5), "bytes arrived for an acks=0 Produce"
    # The broker's view: one Produce reached the listener's broker, and the
    # good partitions' records are stored there (consumed back directly).
    harness.wait_until(lambda: _tracked(cluster, HERE_BROKER, kw.API_PRODUCE) == 1, 5,
                       what="the rewritten acks=0 Produce to reach broker %d" % HERE_BROKER)
    for p in (0, 1):
        harness.wait_until(lambda p=p: sl.end_offset(cluster, TOPIC, p) == before_ends[p] + 1, 5,
                           what="partition %d's acks=0 record to be written" % p)
        out = h.kcat(["-b", cluster.bootstrap, "-C", "-t", TOPIC, "-p", str(p),
                      "-o", str(before_ends[p]), "-c", "1", "-e", "-q", "-f", "%s\n"],
                     timeout=30).stdout.split()
        assert out == ["acks0-mixed-%d" % p], out
    assert sl.end_offset(cluster, TOPIC, 2) == before_ends[2], "the stale partition was written"
    assert _tracked(cluster, OTHER, kw.API_PRODUCE) == 0
    after = sl.scrape(gate)
    assert sl.delta(after, before, "epochgate_connections_closed_total",
                    reason="fenced_acks0") == 1, after.by("epochgate_connections_closed_total",
                                                          "reason")
    assert sl.delta(after, before, sl.FENCED, api="produce", reason="not_leader") == 1
    h.note("mixed acks=0 Produce (2 good, 1 stale): good partitions written and read back, "
           "stale one not written, connection closed with 0 bytes")


if __name__ == "__main__":
    harness.main(globals())
