"""Hint backfill and the KIP-951 bridge: hints for clients of brokers that send none.

The cluster's ApiVersions are capped at Produce v9 / Fetch v15 (Kafka
3.0-3.6, before KIP-951). epochgate offers Produce v10 / Fetch v16 to
clients, sends v9 / v15 upstream (same request layout), and writes the
response back at the client's version:

- a broker NOT_LEADER_OR_FOLLOWER without a hint gets a backfilled one from
  the view (hints_total{source="backfilled"}), naming epochgate's listener;
- a broker's own CurrentLeader in a Fetch v15 answer reaches a v16 client
  with the NodeEndpoints entry v16 requires;
- a librdkafka 2.15.1 producer and consumer across a leader move receive
  hints through epochgate and take them (debug log), nothing lost, and
  version_downgrades_total counts the bridged requests.
"""

import os
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "bridge"


def _capped_cluster(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    cluster.cmd("apiversion 0 0 9")   # Produce
    cluster.cmd("apiversion 1 0 15")  # Fetch
    return cluster


def _api_versions(conn, corr):
    conn.send(kw.api_versions_request(corr, 0))
    _, err, apis = kw.parse_api_versions_response(conn.recv_frame(), 0)
    assert err == 0
    return apis


def test_bridge_offers_v10_v16_and_backfills_broker_errors(h):
    cluster = _capped_cluster(h)
    direct = sl.connect(cluster.broker_address(1))
    h.on_close(direct.close)
    d = _api_versions(direct, 1)
    assert d[kw.API_PRODUCE][1] == 9 and d[kw.API_FETCH][1] == 15, d
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([TOPIC])
    p0 = md["topics"][TOPIC]["partitions"][0]
    leader, epoch = p0["leader"], p0["leader_epoch"]
    topic_id = bytes.fromhex(md["topics"][TOPIC]["topic_id"])
    other = sl.other_broker(leader)
    sl.wait_view(gate, TOPIC, 0, leader, epoch)
    through = _api_versions(gc.conn(leader), gc.next_corr())
    assert through[kw.API_PRODUCE][1] == 10 and through[kw.API_FETCH][1] == 16, through
    _api_versions(gc.conn(other), gc.next_corr())
    before = sl.scrape(gate)

    # A broker NOT_LEADER_OR_FOLLOWER at v9 carries no hint. The leader is
    # told to refuse the next Produce, answering 400 ms later; meanwhile the
    # partition moves and epochgate's view learns it (another client's
    # Metadata). The client asked at v10: epochgate adds the hint.
    cluster.cmd("push-broker-errors %d Produce NOT_LEADER_OR_FOLLOWER 1 400" % leader)
    conn = gc.conn(leader)
    corr = gc.next_corr()
    conn.send(sw.produce_request(corr, TOPIC, [(0, kw.record_batch([b"refused"]))], acks=-1,
                                 version=10))
    time.sleep(0.05)
    moved_us, new_epoch = cluster.move_leader(TOPIC, 0, other)
    gc.metadata([TOPIC])
    sl.wait_view(gate, TOPIC, 0, other, new_epoch)
    r = sw.parse_produce_response(conn.recv_frame(timeout=5), 10)
    after = sl.scrape(gate)
    assert r["correlation_id"] == corr
    _, _, err, _, hint = r["partitions"][0]
    assert err == sw.NOT_LEADER_OR_FOLLOWER, r
    assert hint == (other, new_epoch), "backfilled hint %s, expected %s" % (
        hint, (other, new_epoch))
    assert r["node_endpoints"].get(other, (None, None))[:2] == gc.brokers[other], (
        r["node_endpoints"], gc.brokers)
    assert sl.delta(after, before, sl.HINTS, source="backfilled") == 1, sl.fences_text(after)
    assert sl.delta(after, before, sl.FENCED) == 0, sl.fences_text(after)
    downgrades = sl.delta(after, before, sl.DOWNGRADES, api="produce")
    assert downgrades == 1, "version_downgrades_total{api=produce} grew by %d" % downgrades

    # Fetch v16 to a follower (the old leader, still a replica) with the
    # current epoch: epochgate forwards it as v15; the broker answers
    # NOT_LEADER_OR_FOLLOWER with CurrentLeader (Fetch v12+) but v15 has no
    # NodeEndpoints. The v16 client must get both (a librdkafka consumer
    # ignores a Fetch hint without NodeEndpoints).
    corr = gc.next_corr()
    got = gc.exchange(sw.fetch_request(corr, topic_id, [(0, new_epoch, 0)], version=16),
                      node=leader)
    f = sw.parse_fetch_response(got, 16)
    part = f["partitions"][(topic_id, 0)]
    final = sl.scrape(gate)
    assert part["error"] == sw.NOT_LEADER_OR_FOLLOWER, part
    assert part["current_leader"] == (other, new_epoch), part
    assert f["node_endpoints"].get(other, (None, None))[:2] == gc.brokers[other], (
        "Fetch v16 hint %s without a NodeEndpoints entry for node %d: %s" % (
            part["current_leader"], other, f["node_endpoints"]))
    assert sl.delta(final, after, sl.DOWNGRADES, api="fetch") == 1
    h.note("cluster capped at Produce v9 / Fetch v15, epochgate offers v10 / v16; broker "
           "NOT_LEADER at v9 reached the v10 client with a backfilled hint %d/%d at %s:%d; "
           "Fetch v15 hint reached the v16 client with NodeEndpoints; %s; downgrades %s" % (
               other, new_epoch, gc.brokers[other][0], gc.brokers[other][1],
               sl.fences_text(final), final.by(sl.DOWNGRADES, "api")))


def test_librdkafka_gets_hints_through_bridge_across_move(h):
    cluster = _capped_cluster(h)
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    sl.open_node_connections(gc, [TOPIC])
    log = os.path.join(h.workdir, "clients.rdkafka.log")
    timeline = os.path.join(h.workdir, "timeline.csv")
    check = h.rdkafka_check_async([
        "--bootstrap", gate.bootstrap, "--topic", TOPIC, "--partitions-keyed", "--idempotent",
        "--duration-s", "4", "--rate", "800", "--concurrent", "--consume-group", "bridge-group",
        "--timeline", timeline, "--debug", "broker,metadata,msg,fetch", "--log-file", log])
    # The move must find both clients at partition 0's old leader (the
    # consumer fetches what the producer wrote), or no hint is ever due.
    leader = cluster.partition(TOPIC, 0)["leader"]
    sl.wait_consumer_fetching(log, TOPIC, 0, leader)
    m1 = sl.scrape(gate)
    new = sl.other_broker(leader)
    moved_us, epoch, old, _ = sl.move_view_first(cluster, gc, TOPIC, 0, new)
    s = check.result(timeout=90)
    m2 = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"], s
    h.assert_only_front_connections(log, cluster)
    hints = sl.delta(m2, m1, sl.HINTS, source="synthesized") + \
        sl.delta(m2, m1, sl.HINTS, source="backfilled")
    assert hints >= 1, "no hint sent through the bridge: %s" % sl.fences_text(m2)
    took = sl.hint_updates(log, TOPIC, 0)
    assert (new, epoch) in took, (
        "librdkafka's log shows no leader-discovery update to %d/%d: %s" % (new, epoch, took))
    downgrades = m2.by(sl.DOWNGRADES, "api")
    assert downgrades.get("produce", 0) > 0 and downgrades.get("fetch", 0) > 0, downgrades
    rows = harness.read_timeline(timeline)
    recovery = harness.recovery_ms(rows, moved_us, 0, new)
    h.note("librdkafka 2.15.1 over a Produce v9 / Fetch v15 cluster: p0 %d->%d (epoch %d), "
           "%d acked and consumed, 0 lost; client took the hint (%d leader-discovery updates); "
           "first ack by the new leader %.1f ms after the move; %s; downgrades %s" % (
               old, new, epoch, s["acked"], len(took), recovery if recovery else -1,
               sl.fences_text(m2), downgrades))


test_librdkafka_gets_hints_through_bridge_across_move.timeout = 120


if __name__ == "__main__":
    harness.main(globals())
