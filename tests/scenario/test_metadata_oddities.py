"""Metadata oddities: metadata that must not make epochgate fence a good
request or hint a wrong leader.

- Same epoch, two leaders (librdkafka PR 5593): a Metadata answer names
  another leader under the epoch the view already has. The real leader keeps
  taking writes through epochgate; no hint ever names the impostor.
- Leader with epoch -1 (franz-go 1331) and a leaderless partition: no fence
  on ignorance, no hint with leader or epoch -1, the real leader keeps
  working; a partition with no leader is forwarded to the broker.
- Topic deleted and recreated (librdkafka issue 4898): the new topic id's
  epochs start again; requests with the new, lower epochs are not fenced,
  whether the client learned them from Metadata v12 (topic ids) or v7.
"""

import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "odd"


def _gate(h, topics):
    cluster = h.start_cluster(3, topics)
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    return cluster, gate, gc


def _produce(gc, node, topic, partition, value, version=10):
    r = sw.parse_produce_response(gc.exchange(sw.produce_request(
        gc.next_corr(), topic, [(partition, kw.record_batch([value]))], acks=-1,
        version=version), node=node), version)
    _, _, err, base, hint = r["partitions"][0]
    return err, base, hint, r["node_endpoints"]


def _fetch_error(gc, node, topic, partition, epoch, version=12):
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(gc.next_corr(), topic, [(partition, epoch, 0)], version=version),
        node=node), version)
    part = r["partitions"][(topic, partition)]
    return part["error"], part["current_leader"]


def test_same_epoch_two_leaders_no_wrong_fence_no_wrong_hint(h):
    cluster, gate, gc = _gate(h, ["%s:3:3" % TOPIC])
    p = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][0]
    leader, epoch = p["leader"], p["leader_epoch"]
    sl.wait_view(gate, TOPIC, 0, leader, epoch)
    impostor = sl.other_broker(leader)
    before = sl.scrape(gate)
    cluster.cmd("push-leader-response %s 0 %d %d" % (TOPIC, impostor, epoch))
    seen = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][0]
    assert (seen["leader"], seen["leader_epoch"]) == (impostor, epoch), seen
    # The real leader takes the write at once, whatever the view thinks now.
    err, base, hint, _ = _produce(gc, leader, TOPIC, 0, b"real-leader")
    assert err == 0 and hint is None, (err, hint)
    mid = sl.scrape(gate)
    assert sl.delta(mid, before, sl.FENCED) == 0, sl.fences_text(mid)
    # The impostor refuses; any hint names the real leader.
    err, _, hint, endpoints = _produce(gc, impostor, TOPIC, 0, b"impostor")
    assert err == sw.NOT_LEADER_OR_FOLLOWER, err
    assert hint in (None, (leader, epoch)), "hint %s names the wrong leader" % (hint,)
    if hint:
        assert endpoints.get(leader, (None, None))[:2] == gc.brokers[leader], endpoints
    # The refresh brings the real leader back, but two leaders were named
    # under one epoch: the entry stays conflicted (never fenced, never hinted)
    # until a strictly newer epoch arrives (librdkafka PR 5593).
    settled = sl.wait_view(gate, TOPIC, 0, leader, epoch, timeout=3)
    err, _, _, _ = _produce(gc, leader, TOPIC, 0, b"real-leader-2")
    assert err == 0
    after = sl.scrape(gate)
    assert sl.delta(after, before, sl.HINTS, source="synthesized") == 0, sl.fences_text(after)
    assert sl.delta(after, before, sl.FENCED) == 0, sl.fences_text(after)
    assert sl.read_partition(h, cluster, TOPIC, 0, start=base) == ["real-leader", "real-leader-2"]
    # A real move to a newer epoch clears the conflict: fencing works again.
    cluster.cmd("leader %s 0 %d" % (TOPIC, impostor))
    moved = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][0]
    cleared = sl.wait_view(gate, TOPIC, 0, impostor, moved["leader_epoch"])
    assert not cleared["suspect"], cleared
    err, _, hint2, _ = _produce(gc, leader, TOPIC, 0, b"old-leader")
    final = sl.scrape(gate)
    assert err == sw.NOT_LEADER_OR_FOLLOWER and hint2 == (impostor, moved["leader_epoch"]), (
        err, hint2)
    assert sl.delta(final, after, sl.FENCED, api="produce", reason="not_leader") == 1
    h.note("same epoch %d named leaders %d and %d: write to %d accepted (no fence), %d refused "
           "by the broker with hint %s (no synthesized hint); entry stayed suspect=%s on "
           "%d/%d until epoch %d, then fenced again with hint %s; refreshes %s" % (
               epoch, leader, impostor, leader, impostor, hint, settled["suspect"],
               settled["leader"], settled["epoch"], moved["leader_epoch"], hint2,
               final.by(sl.REFRESHES, "trigger")))


def test_epoch_minus_one_and_leaderless_partition(h):
    cluster, gate, gc = _gate(h, ["%s:3:3" % TOPIC])
    md = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"]
    l1, e1 = md[1]["leader"], md[1]["leader_epoch"]
    sl.wait_view(gate, TOPIC, 1, l1, e1)
    before = sl.scrape(gate)

    # Partition 1: one Metadata answer says leader -1, epoch -1.
    cluster.cmd("push-leader-response %s 1 -1 -1" % TOPIC)
    seen = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][1]
    assert (seen["leader"], seen["leader_epoch"]) == (-1, -1), seen
    view1 = sl.view_partition(gate, TOPIC, 1)
    assert view1["epoch"] >= e1, "the view's epoch went backwards: %s" % view1
    err, _, hint, _ = _produce(gc, l1, TOPIC, 1, b"still-leader")
    assert err == 0 and hint is None, (err, hint)
    assert _fetch_error(gc, l1, TOPIC, 1, e1) == (0, None)
    other = sl.other_broker(l1)
    err, _, follower_hint, endpoints = _produce(gc, other, TOPIC, 1, b"to-follower")
    assert err == sw.NOT_LEADER_OR_FOLLOWER, err
    assert follower_hint in (None, (l1, e1)), "hint %s after a -1/-1 answer" % (follower_hint,)
    assert -1 not in endpoints

    # Partition 2: really leaderless (the mock bumps the epoch). Produce v9
    # and Fetch v11 carry no hint fields (the mock cluster cannot answer a
    # leaderless partition at Produce v10 / Fetch v12+).
    p2 = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][2]
    l2 = p2["leader"]
    cluster.cmd("leader %s 2 -1" % TOPIC)
    seen = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][2]
    assert seen["leader"] == -1, seen
    mid = sl.scrape(gate)
    err, _, _, _ = _produce(gc, l2, TOPIC, 2, b"no-leader", version=9)
    assert err == sw.NOT_LEADER_OR_FOLLOWER, err  # the broker's answer
    err, leader_hint = _fetch_error(gc, l2, TOPIC, 2, -1, version=11)
    assert err in (sw.NOT_LEADER_OR_FOLLOWER, sw.LEADER_NOT_AVAILABLE), err
    after = sl.scrape(gate)
    assert sl.delta(after, mid, sl.FENCED) == 0, (
        "fenced on a partition without a leader: %s" % sl.fences_text(after))
    # Leadership comes back: the client's requests work again.
    cluster.cmd("leader %s 2 %d" % (TOPIC, l2))
    p2 = gc.metadata([TOPIC])["topics"][TOPIC]["partitions"][2]
    err, _, hint, _ = _produce(gc, l2, TOPIC, 2, b"leader-back")
    assert err == 0, err
    assert sl.delta(after, before, sl.HINTS, source="synthesized") <= 1
    final = sl.scrape(gate)
    assert not any(l.get("reason") in ("stale_epoch",) for l, _ in final.rows(sl.FENCED)), \
        sl.fences_text(final)
    h.note("p1 answered -1/-1 once: view kept epoch %d, leader %d still written, follower "
           "refused with hint %s; p2 leaderless: Produce v9 / Fetch v11 forwarded (broker "
           "answered), 0 fenced; back at epoch %d; %s" % (
               view1["epoch"], l1, follower_hint, p2["leader_epoch"], sl.fences_text(final)))


def _recreate(cluster, topic):
    cluster.cmd("delete %s" % topic)
    cluster.cmd("create %s 3 3" % topic)


def test_topic_recreated_with_epochs_reset(h):
    topic = "again"
    cluster, gate, gc = _gate(h, ["%s:3:3" % topic])
    md = gc.metadata_v12([topic])["topics"][topic]
    leader = md["partitions"][0]["leader"]
    for _ in range(3):
        cluster.cmd("leader %s 0 %d" % (topic, leader))
    old = gc.metadata_v12([topic])["topics"][topic]
    old_epoch = old["partitions"][0]["leader_epoch"]
    sl.wait_view(gate, topic, 0, leader, old_epoch)
    checks = []
    for learn_with in ("v12", "v7"):
        _recreate(cluster, topic)
        before = sl.scrape(gate)
        if learn_with == "v12":  # librdkafka 2.15.1: topic ids
            new = gc.metadata_v12([topic])["topics"][topic]
            assert new["topic_id"] != old["topic_id"]
        else:  # older clients: no topic ids
            new = gc.metadata([topic])["topics"][topic]
        p0 = new["partitions"][0]
        assert p0["leader_epoch"] < old_epoch, (p0, old_epoch)
        err, base, hint, _ = _produce(gc, p0["leader"], topic, 0, b"reborn-" + learn_with.encode())
        assert err == 0, "Produce to the recreated topic's leader: error %d hint %s" % (err, hint)
        err, _ = _fetch_error(gc, p0["leader"], topic, 0, p0["leader_epoch"])
        after = sl.scrape(gate)
        assert err == 0 and sl.delta(after, before, sl.FENCED) == 0, (
            "recreated topic learned via Metadata %s, Fetch with its epoch %d (old topic: %d): "
            "error %d; view %s; %s" % (learn_with, p0["leader_epoch"], old_epoch, err,
                                       sl.view_partition(gate, topic, 0), sl.fences_text(after)))
        view = sl.view_partition(gate, topic, 0)
        checks.append("via Metadata %s: epoch %d (was %d) written and fetched, view %s/%s id %s"
                      % (learn_with, p0["leader_epoch"], old_epoch, view["leader"], view["epoch"],
                         (view["topic_id"] or "?")[:8]))
        old_epoch = max(old_epoch, p0["leader_epoch"])
        time.sleep(0.05)
    h.note("recreated topic: " + "; ".join(checks))


if __name__ == "__main__":
    harness.main(globals())
