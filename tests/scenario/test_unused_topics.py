"""The view keeps the topics clients use, and the refresher refreshes them.

A client's all-topics Metadata (what `kcat -L` or an admin tool sends)
teaches epochgate every topic of the cluster. Topics no request names for
`refresher.topic_idle_ms` leave the view, so the periodic refresh stops
naming them (one `kcat -L` would otherwise make every later refresh carry
every topic); a topic in use stays; a request naming a forgotten topic is
forwarded and the view learns the topic again. And a partition whose urgent
refreshes keep coming does not starve the periodic refresh of the others.
"""

import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402

INTERVAL_MS = 300
IDLE_MS = 1500
FORGOTTEN = "epochgate_view_topics_forgotten_total"
REFRESHES = "epochgate_metadata_refreshes_total"


def _config(idle_ms, extra=""):
    return ("refresher:\n  interval_ms: %d\n  urgent_min_interval_ms: 100\n"
            "  topic_idle_ms: %d\n%s" % (INTERVAL_MS, idle_ms, extra))


def _topics(gate):
    return sorted(t["name"] for t in sl.view(gate)["topics"])


def _learn_all_topics(gc):
    """Metadata v12 with a null topic array: every topic of the cluster."""
    md = sw.parse_metadata_response_v12(
        gc.exchange(sw.metadata_request_v12(gc.next_corr(), None)))
    gc.brokers = dict(md["brokers"])
    return md


def _produce_ok(gc, cluster, topic, value):
    leader = cluster.partition(topic, 0)["leader"]
    r = sl.produce_values(gc, leader, topic, 0, [value])
    err = r["partitions"][0][2]
    assert err == 0, "Produce to %s[0] through epochgate: error %d" % (topic, err)


def _start(h, idle_ms, extra=""):
    cluster = h.start_cluster(3, ["busy:1:3", "idle1:1:3", "idle2:1:3"])
    gate = sl.start_gate(h, cluster, config=_config(idle_ms, extra))
    gc = sl.GateClient(h, gate)
    _learn_all_topics(gc)
    harness.wait_until(lambda: _topics(gate) == ["busy", "idle1", "idle2"], 5,
                       what="the view to hold all three topics")
    return cluster, gate, gc


def _keep_busy_for(gc, cluster, seconds, until=None):
    """Produces to `busy` every 200 ms for `seconds`, or until `until()`."""
    deadline = time.monotonic() + seconds
    i = 0
    while time.monotonic() < deadline:
        _produce_ok(gc, cluster, "busy", b"v%d" % i)
        i += 1
        if until is not None and until():
            return True
        time.sleep(0.2)
    return False


def test_topics_no_request_names_leave_the_view_and_the_refresh(h):
    cluster, gate, gc = _start(h, IDLE_MS)
    forgot = _keep_busy_for(gc, cluster, 15, until=lambda: _topics(gate) == ["busy"])
    m = sl.scrape(gate)
    h.note("after %.1f s of idle time: view %s, %s %d" % (
        IDLE_MS / 1000.0, _topics(gate), FORGOTTEN, m.sum(FORGOTTEN)))
    assert forgot, "view still holds %s after 15 s (topic_idle_ms %d)" % (_topics(gate), IDLE_MS)
    assert m.sum(FORGOTTEN) == 2, m.sum(FORGOTTEN)
    with open(gate.proc.log_path, errors="replace") as f:
        assert any("forgot 2 topics" in l and "idle1, idle2" in l for l in f), \
            "no log line names the forgotten topics"
    # The refresher no longer names them: several periodic refreshes later
    # the view has not learned them back.
    periodic = m.sum(REFRESHES, trigger="periodic")
    _keep_busy_for(gc, cluster, 4 * INTERVAL_MS / 1000.0)
    m = sl.scrape(gate)
    assert m.sum(REFRESHES, trigger="periodic") >= periodic + 2, "no periodic refresh ran"
    assert _topics(gate) == ["busy"], "a periodic refresh still named %s" % _topics(gate)

    # A request naming a forgotten topic is forwarded (the broker answers)
    # and the view learns the topic again.
    _produce_ok(gc, cluster, "idle1", b"back")
    harness.wait_until(lambda: "idle1" in _topics(gate), 5,
                       what="the view to learn idle1 again")
    assert sl.view_partition(gate, "idle1", 0)["leader"] == cluster.partition("idle1", 0)["leader"]


def test_a_forgotten_topic_named_by_id_only_is_learned_again(h):
    # Fetch v13+ (and Produce v13, the share APIs) name topics by id alone;
    # the view keeps a forgotten topic's id, so its refresh asks by name.
    cluster, gate, gc = _start(h, IDLE_MS)
    topic_id = bytes.fromhex(_learn_all_topics(gc)["topics"]["idle1"]["topic_id"])
    assert _keep_busy_for(gc, cluster, 15, until=lambda: _topics(gate) == ["busy"]), \
        _topics(gate)
    before = sl.scrape(gate)
    leader = cluster.partition("idle1", 0)["leader"]
    frame = sw.fetch_request(gc.next_corr(), topic_id, [(0, -1, 0)], version=13)
    gc.exchange(frame, leader)
    harness.wait_until(lambda: "idle1" in _topics(gate), 5,
                       what="the view to learn idle1 again after a Fetch v13 naming its id")
    after = sl.scrape(gate)
    urgent = sum(v for l, v in after.rows(REFRESHES) if l.get("trigger") != "periodic") - sum(
        v for l, v in before.rows(REFRESHES) if l.get("trigger") != "periodic")
    h.note("a Fetch v13 naming forgotten idle1 by id: learned again after %d urgent "
           "refreshes" % urgent)
    assert sl.view_partition(gate, "idle1", 0)["leader"] == leader


def test_topic_idle_ms_zero_keeps_every_topic(h):
    cluster, gate, gc = _start(h, 0)
    _keep_busy_for(gc, cluster, (IDLE_MS + 3 * INTERVAL_MS) / 1000.0)
    assert _topics(gate) == ["busy", "idle1", "idle2"], _topics(gate)
    assert sl.scrape(gate).sum(FORGOTTEN) == 0


def test_urgent_refreshes_of_one_topic_do_not_starve_the_periodic_refresh(h):
    # refresh_before_fence_ms 0: every fence of `busy` (a Produce sent to a
    # broker that does not lead it) first asks for an urgent refresh of it.
    policy = "policy:\n  refresh_before_fence_ms: 0\n"
    cluster, gate, gc = _start(h, 0, policy)
    leader = cluster.partition("busy", 0)["leader"]
    wrong = sl.other_broker(leader)
    gc.metadata_v12(["busy"])
    before = sl.scrape(gate)
    deadline = time.monotonic() + 3.0
    i = 0
    while time.monotonic() < deadline:
        sl.produce_values(gc, wrong, "busy", 0, [b"w%d" % i])
        i += 1
        time.sleep(0.12)
    after = sl.scrape(gate)
    urgent = sum(v for l, v in after.rows(REFRESHES) if l.get("trigger") != "periodic") - sum(
        v for l, v in before.rows(REFRESHES) if l.get("trigger") != "periodic")
    periodic = sl.delta(after, before, REFRESHES, trigger="periodic")
    h.note("3 s of fenced writes: %d urgent refreshes, %d periodic (interval %d ms)" % (
        urgent, periodic, INTERVAL_MS))
    assert urgent >= 5, "the setup made only %d urgent refreshes" % urgent
    assert periodic >= 3, (
        "%d periodic refreshes in 3 s at interval %d ms while urgent refreshes of one topic "
        "kept coming (%d)" % (periodic, INTERVAL_MS, urgent))


if __name__ == "__main__":
    harness.main(globals())
