"""A bogus leader epoch cannot pin the view (docs/architecture.md invariant 6).

One Metadata answer names an impostor leader at an epoch far above the true
one (an unclean election or a dying broker can do this); the mock cluster
plays it with `push-leader-response`, which changes one answer and nothing
in the brokers. The view takes the higher epoch (one report moves epochs
forward) and fences the clients that use the true epoch, but only until the
cluster says otherwise: the client's own Metadata and epochgate's refreshes
report the true epoch for the same topic id, fencing stops after two of them
and the view is back at the true leader and epoch after
policy.epoch_rollback_confirmations (3) - not after max_staleness_ms (5
minutes), and not by silently never fencing again.

Asserted on the wire (what the client gets, what the broker stored) and on
/debug/metadata; the figures (time from the bogus answer to fencing stopping
and to the view back at the true epoch) are notes.
"""

import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402

TOPIC = "pinned"
DISPUTES = "epochgate_view_epoch_disputes_total"
ROLLBACKS = "epochgate_view_epoch_rollbacks_total"


def _fetch(gc, node, epoch, offset=0):
    """Fetch v12 of TOPIC[0] at `epoch` on `node`'s listener: (error, records)."""
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(gc.next_corr(), TOPIC, [(0, epoch, offset)], version=12), node=node), 12)
    part = r["partitions"][(TOPIC, 0)]
    return part["error"], part.get("records")


def _produce(gc, node, value):
    r = sl.produce_values(gc, node, TOPIC, 0, [value], version=10)
    _, _, err, base, hint = r["partitions"][0]
    return err, base, hint


def test_bogus_epoch_is_rolled_back_by_the_cluster(h):
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    # The periodic refresh (30 s) is left at its default: healing must not wait for it.
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    # One real move first, so the true epoch is above 0 and a client behind
    # it can be fenced at the end.
    first = cluster.partition(TOPIC, 0)["leader"]
    cluster.move_leader(TOPIC, 0, sl.other_broker(first))
    p = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    leader, epoch = p["leader"], p["leader_epoch"]
    assert epoch > 0, p
    sl.wait_view(gate, TOPIC, 0, leader, epoch)
    err, base, _ = _produce(gc, leader, b"before")
    assert err == 0, err

    impostor, bogus = sl.other_broker(leader), epoch + 100
    before = sl.scrape(gate)
    cluster.cmd("push-leader-response %s 0 %d %d" % (TOPIC, impostor, bogus))
    seen = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    t_bogus = time.monotonic()
    assert (seen["leader"], seen["leader_epoch"]) == (impostor, bogus), seen
    pinned = sl.wait_view(gate, TOPIC, 0, impostor, bogus, timeout=2)

    # The pin: epochgate answers a Fetch at the true epoch with
    # FENCED_LEADER_EPOCH itself (the broker, at the true epoch, serves it).
    err, _ = _fetch(gc, leader, epoch)
    assert err == sw.FENCED_LEADER_EPOCH, err

    # What a client does after FENCED_LEADER_EPOCH: ask Metadata, retry.
    md = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    assert (md["leader"], md["leader_epoch"]) == (leader, epoch), md
    t_unfenced = None
    records = None
    deadline = time.monotonic() + 10
    fenced_retries = 0
    while time.monotonic() < deadline:
        err, records = _fetch(gc, leader, epoch)
        if err == 0:
            t_unfenced = time.monotonic()
            break
        assert err == sw.FENCED_LEADER_EPOCH, err
        fenced_retries += 1
        time.sleep(0.02)
    assert t_unfenced is not None, (
        "a Fetch at the true epoch %d was still fenced 10 s after the bogus answer; view %s"
        % (epoch, sl.view_partition(gate, TOPIC, 0)))
    assert records and b"before" in sw.record_values(records), "served by the broker: %r" % (
        records,)

    healed = sl.wait_view(gate, TOPIC, 0, leader, epoch, timeout=10)
    t_healed = time.monotonic()
    assert not healed["suspect"], healed
    assert healed.get("rolled_back", {}).get("from_epoch") == bogus, healed
    after = sl.scrape(gate)
    assert sl.delta(after, before, ROLLBACKS) == 1, after.rows(ROLLBACKS)
    assert sl.delta(after, before, DISPUTES) == 1, after.rows(DISPUTES)
    assert sl.view(gate)["epoch_rollbacks_total"] >= 1

    # The true leader takes writes again (the impostor's hint is gone) and
    # the broker stores them.
    err, _, hint = _produce(gc, leader, b"after")
    assert err == 0 and hint is None, (err, hint)
    assert sl.read_partition(h, cluster, TOPIC, 0, start=base) == ["before", "after"]
    # And fencing works again, against the true epoch.
    before_stale = sl.scrape(gate)
    err, _ = _fetch(gc, leader, epoch - 1)
    assert err == sw.FENCED_LEADER_EPOCH, err
    assert sl.delta(sl.scrape(gate), before_stale, sl.FENCED, api="fetch",
                    reason="stale_epoch") == 1, "fenced by epochgate, not only by the broker"

    h.note("bogus epoch %d (impostor %d) over true %d (leader %d): pinned %s; fencing stopped "
           "%.0f ms after the bogus answer (%d fenced retries), view back at epoch %d %.0f ms "
           "after it; refreshes %s" % (
               bogus, impostor, epoch, leader, pinned["epoch"], (t_unfenced - t_bogus) * 1000,
               fenced_retries, healed["epoch"], (t_healed - t_bogus) * 1000,
               {k: v - before.by(sl.REFRESHES, "trigger").get(k, 0)
                for k, v in after.by(sl.REFRESHES, "trigger").items()}))


def _fetch_by_id(gc, node, topic_id, epoch):
    """Fetch v13 of partition 0 of the topic with `topic_id` at `epoch`: error."""
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(gc.next_corr(), topic_id, [(0, epoch, 0)], version=13), node=node), 13)
    return r["partitions"][(topic_id, 0)]["error"]


def test_the_leader_serving_the_true_epoch_rolls_the_view_back(h):
    # With the refresher off and 5 confirmations needed, the client's own
    # Metadata (two lower reports) only stops the fencing; the three Fetches
    # at the true epoch that the true leader then serves are what the cluster
    # says next (a broker answers another epoch than its own with
    # FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH, KIP-320), and they roll the
    # view back. Without them the entry stays disputed at the bogus epoch.
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    gate = sl.start_gate(h, cluster, config=(
        "refresher:\n  enabled: false\npolicy:\n  epoch_rollback_confirmations: 5\n"))
    gc = sl.GateClient(h, gate)
    first = cluster.partition(TOPIC, 0)["leader"]
    cluster.move_leader(TOPIC, 0, sl.other_broker(first))
    md = gc.metadata_v12([TOPIC])["topics"][TOPIC]
    p = md["partitions"][0]
    leader, epoch, topic_id = p["leader"], p["leader_epoch"], bytes.fromhex(md["topic_id"])
    sl.wait_view(gate, TOPIC, 0, leader, epoch)
    assert _fetch_by_id(gc, leader, topic_id, epoch) == 0

    impostor, bogus = sl.other_broker(leader), epoch + 100
    before = sl.scrape(gate)
    cluster.cmd("push-leader-response %s 0 %d %d" % (TOPIC, impostor, bogus))
    gc.metadata_v12([TOPIC])
    sl.wait_view(gate, TOPIC, 0, impostor, bogus, timeout=2)
    assert _fetch_by_id(gc, leader, topic_id, epoch) == sw.FENCED_LEADER_EPOCH
    for _ in range(2):  # the client asks again after FENCED_LEADER_EPOCH
        again = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
        assert (again["leader"], again["leader_epoch"]) == (leader, epoch), again
    disputed = sl.view_partition(gate, TOPIC, 0)
    assert disputed["epoch"] == bogus and disputed["lower_reports"]["disputed"], disputed
    assert disputed["lower_reports"]["served"] == 0, disputed

    served = []
    for i in range(3):
        err = _fetch_by_id(gc, leader, topic_id, epoch)
        assert err == 0, "Fetch %d at the true epoch: error %d" % (i, err)
        served.append(sl.view_partition(gate, TOPIC, 0))
    assert served[1]["epoch"] == bogus and served[1]["lower_reports"]["served"] == 2, served[1]
    healed = served[2]
    assert (healed["leader"], healed["epoch"]) == (leader, epoch), (
        "three Fetches the leader served at epoch %d did not roll the view back: %s"
        % (epoch, healed))
    assert healed["rolled_back"]["from_epoch"] == bogus, healed
    assert healed["rolled_back"]["served"] == 3 and healed["source"] == "served", healed
    after = sl.scrape(gate)
    assert sl.delta(after, before, ROLLBACKS) == 1, after.rows(ROLLBACKS)
    assert sl.delta(after, before, DISPUTES) == 1, after.rows(DISPUTES)
    # Fencing is back, against the true epoch.
    assert _fetch_by_id(gc, leader, topic_id, epoch - 1) == sw.FENCED_LEADER_EPOCH
    h.note("bogus epoch %d over true %d (leader %d), refresher off, 5 confirmations: 2 lower "
           "Metadata disputed it, then 3 Fetches the leader served rolled it back: %s" % (
               bogus, epoch, leader, healed))


def test_one_lower_report_keeps_a_real_move_fenced(h):
    # The other side of the rule: after a real leader move, a client still
    # at the old epoch is fenced, and one lagging answer does not change that.
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    p = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    leader, old_epoch = p["leader"], p["leader_epoch"]
    new_leader = sl.other_broker(leader)
    cluster.cmd("leader %s 0 %d" % (TOPIC, new_leader))
    moved = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    new_epoch = moved["leader_epoch"]
    assert new_epoch > old_epoch, (moved, old_epoch)
    sl.wait_view(gate, TOPIC, 0, new_leader, new_epoch)
    before = sl.scrape(gate)
    # One lagging answer (a broker still at the old leader and epoch).
    cluster.cmd("push-leader-response %s 0 %d %d" % (TOPIC, leader, old_epoch))
    lag = gc.metadata_v12([TOPIC])["topics"][TOPIC]["partitions"][0]
    assert (lag["leader"], lag["leader_epoch"]) == (leader, old_epoch), lag
    err, _ = _fetch(gc, new_leader, old_epoch)
    assert err == sw.FENCED_LEADER_EPOCH, err
    settled = sl.wait_view(gate, TOPIC, 0, new_leader, new_epoch, timeout=2)
    time.sleep(0.5)  # the refresh the lower report asked for confirms the new epoch
    settled = sl.view_partition(gate, TOPIC, 0)
    assert (settled["leader"], settled["epoch"]) == (new_leader, new_epoch), settled
    assert not settled["suspect"] and "lower_reports" not in settled, settled
    after = sl.scrape(gate)
    assert sl.delta(after, before, ROLLBACKS) == 0 and sl.delta(after, before, DISPUTES) == 0
    h.note("real move %d/%d -> %d/%d, one lagging answer at %d: still fenced, view %s/%s" % (
        leader, old_epoch, new_leader, new_epoch, old_epoch, settled["leader"],
        settled["epoch"]))


if __name__ == "__main__":
    harness.main(globals())
