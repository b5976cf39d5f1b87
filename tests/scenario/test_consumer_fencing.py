"""Consumer fencing scenarios: consumers and leader epochs.

3. A Fetch carrying a stale CurrentLeaderEpoch is answered
   FENCED_LEADER_EPOCH by epochgate itself (it never reaches the broker: a
   recording relay sits between epochgate and the broker), a Fetch with the
   current epoch then reads the same records; and a real librdkafka 2.15.1
   consumer group keeps consuming across a leader move with no gap and no
   duplicate while epochgate fences its stale fetches.
4. Epoch injection: a sessionless Fetch v9+ sent with CurrentLeaderEpoch -1
   through the bootstrap listener (its target broker unknown to the
   decision) reaches the broker carrying the view's epoch (decoded at the
   relay); a fetch-session request is left alone (KIP-227 sessions cache
   epochs). Which v11+ fetches get none is in policy's decision-table tests.
"""

import os
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402
from epochgate_testlib.tcp_relay import TcpRelay  # noqa: E402

TOPIC = "epochs"


def _relay_setup(h):
    """Cluster, a recording relay in front of the leader of partition 0, and
    epochgate whose only bootstrap broker is that relay (its bootstrap
    listener therefore forwards through the relay). Returns (cluster, relay,
    gate, GateClient, leader)."""
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    leader = cluster.partition(TOPIC, 0)["leader"]
    relay = TcpRelay(cluster.broker_address(leader))
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, upstream=relay.address)
    gc = sl.GateClient(h, gate)
    gc.metadata([TOPIC])
    return cluster, relay, gate, gc, leader


def _relayed_fetches(relay, correlation_ids):
    """{correlation id: decoded Fetch request} of the given ids that crossed
    the relay towards the broker."""
    out = {}
    for to_upstream, _ in relay.snapshots():
        for f in sw.frames_of(to_upstream):
            if sw.frame_api(f)[0] == kw.API_FETCH:
                corr = kw.frame_correlation_id(f, is_request=True)
                if corr in correlation_ids:
                    out[corr] = (sw.parse_fetch_request(f), f)
    return out


def _produce_direct(cluster, partition, values):
    leader = cluster.partition(TOPIC, partition)["leader"]
    c = sl.connect(cluster.broker_address(leader), timeout=5)
    try:
        c.send(kw.produce_request(5, TOPIC, partition, kw.record_batch(values), acks=1))
        _, res = kw.parse_produce_response(c.recv_frame())
    finally:
        c.close()
    err, base = res[(TOPIC, partition)]
    assert err == 0, "direct produce error %d" % err
    return base


def test_stale_fetch_epoch_answered_by_epochgate_then_current_epoch_reads(h):
    cluster, relay, gate, gc, leader = _relay_setup(h)
    values = [b"e%d" % i for i in range(5)]
    base = _produce_direct(cluster, 0, values)
    e0 = cluster.partition(TOPIC, 0)["leader_epoch"]
    cluster.cmd("leader %s 0 %d" % (TOPIC, leader))  # same leader, new term
    e1 = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][0]["leader_epoch"]
    assert e1 == e0 + 1, (e0, e1)
    sl.wait_view(gate, TOPIC, 0, leader, e1)
    before = sl.scrape(gate)

    stale_corr = gc.next_corr()
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(stale_corr, TOPIC, [(0, e0, base)], version=12)), 12)
    part = r["partitions"][(TOPIC, 0)]
    assert r["correlation_id"] == stale_corr, r
    assert part["error"] == sw.FENCED_LEADER_EPOCH, part
    assert not part["records"], part
    stale_hint = part["current_leader"]
    # Fetch v12-15 has a CurrentLeader field but no NodeEndpoints; epochgate
    # only hints where it can also say where the leader is (v16+).
    after = sl.scrape(gate)
    assert sl.delta(after, before, sl.FENCED, api="fetch", reason="stale_epoch",
                    mode="enforce") == 1, sl.fences_text(after)
    good_corr = gc.next_corr()
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(good_corr, TOPIC, [(0, e1, base)], version=12)), 12)
    part = r["partitions"][(TOPIC, 0)]
    assert part["error"] == 0, part
    assert sw.record_values(part["records"])[:5] == values, sw.record_values(part["records"])
    seen = harness.wait_until(lambda: _relayed_fetches(relay, {stale_corr, good_corr}).get(
        good_corr) and _relayed_fetches(relay, {stale_corr, good_corr}), 5,
        what="the current-epoch Fetch at the broker")
    assert stale_corr not in seen, "the stale Fetch reached the broker"
    assert seen[good_corr][0]["partitions"][(TOPIC, 0)] == e1
    h.note("Fetch v12 with epoch %d (view %d): FENCED_LEADER_EPOCH from epochgate, never "
           "forwarded; CurrentLeader %s; with epoch %d: %d records read back" % (
               e0, e1, stale_hint or "absent (v12 has no NodeEndpoints to name it)", e1,
               len(values)))


def test_epoch_injected_into_sessionless_fetch_only(h):
    cluster, relay, gate, gc, leader = _relay_setup(h)
    values = [b"i%d" % i for i in range(3)]
    base = _produce_direct(cluster, 0, values)
    cluster.cmd("leader %s 0 %d" % (TOPIC, leader))
    cluster.cmd("leader %s 0 %d" % (TOPIC, leader))
    epoch = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][0]["leader_epoch"]
    sl.wait_view(gate, TOPIC, 0, leader, epoch)
    before = sl.scrape(gate)
    sent = {}
    for version in (9, 11, 12):
        corr = gc.next_corr()
        frame = sw.fetch_request(corr, TOPIC, [(0, -1, base)], version=version)
        r = sw.parse_fetch_response(gc.exchange(frame), version)
        part = r["partitions"][(TOPIC, 0)]
        assert part["error"] == 0, (version, part)
        assert sw.record_values(part["records"])[:3] == values, version
        sent[corr] = (version, frame)
    # A full fetch that opens a fetch session (SessionId 0, SessionEpoch 0):
    # the broker caches the partition's epoch for later incremental fetches,
    # so epochgate must not write one the client never asked for.
    session_corr = gc.next_corr()
    session_frame = sw.fetch_request(session_corr, TOPIC, [(0, -1, base)], version=12,
                                     session_epoch=0)
    r = sw.parse_fetch_response(gc.exchange(session_frame), 12)
    assert r["partitions"][(TOPIC, 0)]["error"] == 0, r
    after = sl.scrape(gate)

    seen = harness.wait_until(
        lambda: (lambda s: s if len(s) == 4 else None)(
            _relayed_fetches(relay, set(sent) | {session_corr})), 5,
        what="4 Fetch requests at the broker side of the relay")
    for corr, (version, frame) in sent.items():
        req, raw = seen[corr]
        assert req["api_version"] == version
        assert req["partitions"][(TOPIC, 0)] == epoch, (
            "Fetch v%d reached the broker with CurrentLeaderEpoch %d, view epoch %d"
            % (version, req["partitions"][(TOPIC, 0)], epoch))
        assert raw != frame  # rewritten, and only in that field:
        assert len(raw) == len(frame)
    req, raw = seen[session_corr]
    assert req["partitions"][(TOPIC, 0)] == -1 and raw == session_frame, req
    injected = sl.delta(after, before, sl.INJECTED)
    assert injected == 3, "epochs_injected_total grew by %d, expected 3" % injected
    assert sl.delta(after, before, sl.FENCED) == 0, sl.fences_text(after)
    h.note("Fetch v9/v11/v12 sent with -1 arrived at the broker with epoch %d (the view's); "
           "the session-opening fetch arrived byte-identical with -1; injected +%d"
           % (epoch, injected))


def test_consumer_group_continues_across_move_without_gap_or_duplicate(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    log = os.path.join(h.workdir, "clients.rdkafka.log")
    check = h.rdkafka_check_async([
        "--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partitions-keyed",
        "--idempotent", "--duration-s", "4", "--rate", "600", "--concurrent",
        "--consume-group", "epochs-group", "--debug", "broker,metadata,fetch",
        # A Fetch at most every 10 ms, not a 500 ms long poll: the group's
        # next Fetch at the old leader, carrying the old epoch, comes before
        # anything else could tell it of the move.
        "-X", "fetch.wait.max.ms=10",
        "--log-file", log])
    # The move must find the group fetching partition 0 from its old leader,
    # or no stale-epoch Fetch is ever sent.
    leader = cluster.partition(TOPIC, 0)["leader"]
    sl.wait_consumer_fetching(log, TOPIC, 0, leader)
    m1 = sl.scrape(gate)
    new = sl.other_broker(leader)
    # The cluster moves right after the view learned it (check_first=False):
    # while the view is ahead, the producer's writes it fences make epochgate
    # refresh, and the cluster's lower epoch would dispute the view's and stop
    # its fencing before the group's next Fetch came.
    moved_us, epoch, old, _ = sl.move_view_first(cluster, gc, TOPIC, 0, new, check_first=False)
    time.sleep(1.0)
    s = check.result(timeout=90)
    m2 = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["misplaced"] == 0 and s["consumed"] >= s["acked"] > 1500, s
    h.assert_only_front_connections(log, cluster)
    fenced = sl.delta(m2, m1, sl.FENCED, api="fetch", reason="stale_epoch", mode="enforce")
    assert fenced >= 1, "no stale-epoch Fetch fenced: %s" % sl.fences_text(m2)
    hinted = sl.delta(m2, m1, sl.HINTS, source="synthesized")
    took = (new, epoch) in sl.hint_updates(log, TOPIC, 0)
    fetched = sl.first_fetched_from(log, TOPIC, 0, new, moved_us / 1e6)
    h.note("consumer group across p0 %d->%d (epoch %d): %d acked, %d consumed, no gap, no "
           "duplicate; epochgate fenced %d stale-epoch Fetch partitions with %d synthesized "
           "hints (Fetch v16), clients took the hint: %s; first records from the new leader "
           "%s after the move; %s" % (
               old, new, epoch, s["acked"], s["consumed"], fenced, hinted,
               "yes" if took else "no",
               "%.1f ms" % ((fetched * 1e6 - moved_us) / 1000) if fetched else "(not seen)",
               sl.fences_text(m2)))


test_consumer_group_continues_across_move_without_gap_or_duplicate.timeout = 120


if __name__ == "__main__":
    harness.main(globals())
