"""Old clients get fencing within one refresh round trip.

kafka-python 2.0.2 (Debian python3-kafka) sends Metadata below v7, which
carries no leader epochs, and a view entry without an epoch never fences.
A topic first learned from such an answer, or a leader move seen in one,
makes epochgate refresh the topic at its own Metadata version at once
(trigger `no_epoch`, coalesced; without waiting out
refresher.urgent_min_interval_ms, but at most once per topic and four times
in all per that interval) instead of at the next periodic refresh (30 s by
default, left unchanged here).

The end-to-end check: a kafka-python producer learns the topic, the leader
moves, another kafka-python client's Metadata shows the move, and the first
producer - still aiming at the old leader - is refused by epochgate: the
mock cluster's request log shows that its stale Produce never reached the
old leader, and the record is stored once, on the new leader, after
kafka-python's own retry.
"""

import base64
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "oldclient"


def _kafka():
    try:
        import kafka  # Debian python3-kafka, run by /usr/bin/python3
    except ImportError:
        raise harness.Skip("kafka-python not installed (apt-get install python3-kafka)")
    return kafka


def _tracked(cluster, broker, api):
    for item in cluster.cmd("track dump").split()[1:]:
        key, _, n = item.partition("=")
        b, _, a = key.partition(":")
        if int(b) == broker and int(a) == api:
            return int(n)
    return 0


def _wait_fenceable(gate, leader, after_epoch, timeout, topic=TOPIC):
    """Waits until the view names `leader` with an epoch above `after_epoch`
    and trusts it (so it fences); returns (entry, seconds waited)."""
    start = time.monotonic()

    def ok():
        p = sl.view_partition(gate, topic, 0)
        return p if (p and p["leader"] == leader and p["epoch"] > after_epoch
                     and not p["suspect"]) else None
    entry = harness.wait_until(ok, timeout, interval=0.01,
                               what="view %s[0] fenceable at leader %d" % (topic, leader))
    return entry, time.monotonic() - start


def test_kafka_python_producer_at_the_old_leader_is_fenced(h):
    kafka = _kafka()
    cluster = h.start_cluster(3, [])
    gate = sl.start_gate(h, cluster)
    # Created after epochgate loaded its view: only the old clients'
    # Metadata (no epochs) teaches the view this topic, and no request is
    # decided on it before the leader moves.
    cluster.cmd("create %s 1 3" % TOPIC)
    before = sl.scrape(gate)
    producer = kafka.KafkaProducer(bootstrap_servers=gate.bootstrap, acks=1, retries=5,
                                   retry_backoff_ms=50, linger_ms=0, max_block_ms=15000,
                                   request_timeout_ms=10000, client_id="epochgate-stale")
    h.on_close(lambda: producer.close(timeout=5))
    t_learn = time.monotonic()
    assert producer.partitions_for(TOPIC) == {0}
    # kafka-python adds a new topic to its metadata set from its sender
    # thread and asks Metadata once more; let that settle (1 s) so its
    # metadata then stays as it is (300 s max age), and note when the view
    # first had an epoch for the partition.
    first_epoch_after = None
    while time.monotonic() - t_learn < 1.0:
        p = sl.view_partition(gate, TOPIC, 0)
        if first_epoch_after is None and p and p["epoch"] >= 0:
            first_epoch_after = time.monotonic() - t_learn
        time.sleep(0.01)
    old_leader = cluster.partition(TOPIC, 0)["leader"]

    # The leader moves; another old client's Metadata shows it to epochgate.
    new_leader = sl.other_broker(old_leader)
    _, new_epoch = cluster.move_leader(TOPIC, 0, new_leader)
    cluster.cmd("track start")
    watcher = kafka.KafkaProducer(bootstrap_servers=gate.bootstrap, client_id="epochgate-watcher")
    try:
        t_seen = time.monotonic()
        assert watcher.partitions_for(TOPIC) == {0}
    finally:
        watcher.close(timeout=5)
    try:
        moved, _ = _wait_fenceable(gate, new_leader, -1, timeout=5)
    except AssertionError:
        moved = None
    move_window = time.monotonic() - t_seen

    # The first producer still aims at the old leader.
    meta = producer.send(TOPIC, b"stale", partition=0).get(timeout=15)
    stale_at_old = _tracked(cluster, old_leader, kw.API_PRODUCE)
    at_new = _tracked(cluster, new_leader, kw.API_PRODUCE)
    after = sl.scrape(gate)
    fenced = sl.delta(after, before, sl.FENCED, api="produce", reason="not_leader")
    assert stale_at_old == 0, (
        "the stale Produce reached the old leader %d (%d requests): epochgate did not fence "
        "it; view %s" % (old_leader, stale_at_old, sl.view_partition(gate, TOPIC, 0)))
    assert moved is not None and moved["epoch"] == new_epoch, (moved, new_epoch)
    assert at_new >= 1 and fenced >= 1, (at_new, fenced, cluster.cmd("track dump"))
    assert sl.read_partition(h, cluster, TOPIC, 0) == ["stale"], "stored once, on the new leader"
    no_epoch = sl.delta(after, before, sl.REFRESHES, trigger="no_epoch")
    assert no_epoch >= 1, after.by(sl.REFRESHES, "trigger")
    assert first_epoch_after is not None and first_epoch_after < 1.0, first_epoch_after
    h.note("kafka-python %s: topic learned without epochs, view had its epoch %.0f ms after "
           "the producer's Metadata; leader %d -> %d seen by another old client, view "
           "fenceable within %.0f ms; stale Produce fenced by epochgate (%d), 0 reached the old "
           "leader, record at offset %d on the new leader; refreshes %s" % (
               kafka.__version__, first_epoch_after * 1000, old_leader, new_leader,
               move_window * 1000, fenced, meta.offset,
               {k: v - before.by(sl.REFRESHES, "trigger").get(k, 0)
                for k, v in after.by(sl.REFRESHES, "trigger").items() if v}))


class _RawMetadata:
    """A gate in front of a fresh 3-broker cluster whose topic (3 partitions)
    the view has not seen, and one raw Metadata request of `version` for it."""

    def __init__(self, h, version):
        cluster = h.start_cluster(3, [])
        self.gate = sl.start_gate(h, cluster)
        cluster.cmd("create %s 3 3" % TOPIC)
        self.gc = sl.GateClient(h, self.gate)
        self.version = version
        self.before = sl.scrape(self.gate)
        md = kw.parse_metadata_response(self.ask(), version)
        assert sorted(md["topics"][TOPIC]["partitions"]) == [0, 1, 2]
        self.sent = time.monotonic()

    def ask(self):
        return self.gc.exchange(kw.metadata_request(self.gc.next_corr(), [TOPIC],
                                                    version=self.version))

    def refreshed_once(self, trigger):
        """One `trigger` refresh so far, and none for 5 more of the same answer."""
        mid = sl.scrape(self.gate)
        for _ in range(5):
            self.ask()
        time.sleep(0.3)
        after = sl.scrape(self.gate)
        assert sl.delta(mid, self.before, sl.REFRESHES, trigger=trigger) == 1, mid.by(
            sl.REFRESHES, "trigger")
        assert sl.delta(after, mid, sl.REFRESHES, trigger=trigger) == 0, after.by(
            sl.REFRESHES, "trigger")


def test_epochless_metadata_v1_asks_one_refresh_per_topic(h):
    # Raw Metadata v1 for a topic the view never saw: one `no_epoch` refresh
    # (coalesced), and the same answer again asks for nothing more.
    raw = _RawMetadata(h, 1)
    for p in range(3):
        harness.wait_until(
            lambda: (sl.view_partition(raw.gate, TOPIC, p) or {}).get("epoch", -1) >= 0,
            5, interval=0.01, what="epoch of %s[%d]" % (TOPIC, p))
    window = time.monotonic() - raw.sent
    raw.refreshed_once("no_epoch")
    h.note("Metadata v1 for 3 partitions: epochs in the view %.0f ms later, 1 no_epoch refresh, "
           "none for 5 repeats" % (window * 1000))


def test_idless_metadata_v7_teaches_the_view_the_topic_id(h):
    # Raw Metadata v7 (epochs, no topic id) for a topic the view never saw:
    # one `no_topic_id` refresh, after which /debug/metadata shows the id
    # the cluster gives at epochgate's own version; a repeat asks nothing more.
    raw = _RawMetadata(h, 7)
    harness.wait_until(lambda: (sl.view_partition(raw.gate, TOPIC, 0) or {}).get("topic_id"), 5,
                       interval=0.01, what="topic id of %s in the view" % TOPIC)
    window = time.monotonic() - raw.sent
    learned_id = sl.view_partition(raw.gate, TOPIC, 0)["topic_id"]
    raw.refreshed_once("no_topic_id")
    # The id is the cluster's, as a v12 client would see it; /debug/metadata
    # writes ids as Kafka does (URL-safe base64, no padding).
    cluster_id = raw.gc.metadata_v12([TOPIC])["topics"][TOPIC]["topic_id"]
    assert base64.urlsafe_b64decode(learned_id + "==").hex() == cluster_id, (learned_id,
                                                                           cluster_id)
    h.note("Metadata v7 for 3 partitions: topic id %s in the view %.0f ms later, 1 "
           "no_topic_id refresh, none for 5 repeats" % (learned_id, window * 1000))


def _gate_with_epoch(h, urgent_min_interval_ms):
    """A gate in front of 3 brokers whose view has TOPIC[0] led by broker 1
    with its epoch (learnt from a v12 client), and a client for raw frames."""
    cluster = h.start_cluster(3, ["%s:1:3" % TOPIC])
    cluster.cmd("leader %s 0 1" % TOPIC)
    gate = sl.start_gate(h, cluster, config="refresher:\n  urgent_min_interval_ms: %d\n"
                         % urgent_min_interval_ms)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([TOPIC])
    part = md["topics"][TOPIC]["partitions"][0]
    sl.wait_view(gate, TOPIC, 0, 1, part["leader_epoch"])
    return cluster, gate, gc


def _epochless_metadata(gc, node=None):
    """A Metadata v1 answer through epochgate (leaders, no epochs)."""
    md = kw.parse_metadata_response(
        gc.exchange(kw.metadata_request(gc.next_corr(), [TOPIC], version=1), node), 1)
    return md["topics"][TOPIC]["partitions"][0]["leader"]


def test_epochless_move_report_is_confirmed_at_once(h):
    """An old client's Metadata (v1, no epochs) shows the leader moved: the
    view entry is doubted, and fences nothing until a refresh confirms the
    move. The refresh goes at once, not after refresher.urgent_min_interval_ms
    (20 s here, so that waiting it out is plain), and then a write still aimed
    at the old leader is answered by epochgate, never reaching it."""
    cluster, gate, gc = _gate_with_epoch(h, 20000)
    # The startup refresh went a moment ago: the interval has not passed.
    before = sl.scrape(gate)
    _, new_epoch = cluster.move_leader(TOPIC, 0, 2)
    cluster.cmd("track start")
    assert _epochless_metadata(gc) == 2
    entry, waited = _wait_fenceable(gate, 2, new_epoch - 1, timeout=5)
    assert entry["epoch"] == new_epoch, entry
    frame = sw.produce_request(gc.next_corr(), TOPIC, [(0, kw.record_batch([b"stale"]))],
                               acks=1, version=7)
    r = sw.parse_produce_response(gc.exchange(frame, node=1), 7)
    after = sl.scrape(gate)
    assert [(p, e) for _, p, e, _, _ in r["partitions"]] == [(0, sw.NOT_LEADER_OR_FOLLOWER)], r
    assert _tracked(cluster, 1, kw.API_PRODUCE) == 0, cluster.cmd("track dump")
    assert sl.delta(after, before, sl.FENCED, api="produce", reason="not_leader") == 1, \
        after.by(sl.FENCED, "reason")
    assert sl.delta(after, before, sl.REFRESHES, trigger="no_epoch") >= 1, \
        after.by(sl.REFRESHES, "trigger")
    h.note("Metadata v1 showed leader 1 -> 2: view fenceable at epoch %d within %.1f ms of "
           "the report's answer (urgent_min_interval_ms 20000); the stale write was answered "
           "by epochgate" % (new_epoch, waited * 1000))


def test_epochless_move_reports_cannot_make_the_refresher_storm(h):
    """A leader that keeps moving, and an old client asking Metadata v1 after
    every move: each answer is an epoch-less report of a move. The
    refreshes that confirm them at once are bounded per topic (one per
    refresher.urgent_min_interval_ms, 500 ms here), as the ordinary urgent
    ones are: the refresher's counters grow by a few, not by the reports."""
    interval_s = 0.5
    cluster, gate, gc = _gate_with_epoch(h, int(interval_s * 1000))
    before = sl.scrape(gate)
    start = time.monotonic()
    reports, leader = 0, 1
    while time.monotonic() - start < 2.0:
        leader = sl.other_broker(leader)
        cluster.move_leader(TOPIC, 0, leader)
        assert _epochless_metadata(gc) == leader
        reports += 1
    elapsed = time.monotonic() - start
    time.sleep(interval_s * 2)  # what was still pending has gone out
    after = sl.scrape(gate)
    refreshes = sum(sl.delta(after, before, sl.REFRESHES, trigger=t)
                    for t in ("no_epoch", "urgent", "no_topic_id"))
    windows = int(elapsed / interval_s) + 3
    # Per window: at most one refresh confirming the topic at once, and one
    # ordinary urgent refresh.
    assert reports >= 10, reports
    assert 1 <= refreshes <= 2 * windows, (refreshes, reports, after.by(sl.REFRESHES, "trigger"))
    h.note("%d epoch-less move reports in %.1f s: %d refreshes (urgent_min_interval_ms %d)"
           % (reports, elapsed, refreshes, interval_s * 1000))


# ConfirmLimiter::kBurst (proxy/core/confirm_limiter.h): refreshes that skip
# refresher.urgent_min_interval_ms, at most this many per interval.
CONFIRM_BURST = 4


def test_epochless_move_reports_over_many_topics_stay_within_the_burst(h):
    """An old client reports, one topic after another, a leader move on
    each of 12 topics (Metadata v1 per topic, as a client with many topics
    would after a broker restart). With refresher.urgent_min_interval_ms at
    20 s every refresh here is one that skipped the interval. Each of the
    first ConfirmLimiter::kBurst reports, sent once the one before was
    confirmed, gets its own refresh at once; after that the burst is spent:
    the other reports send nothing, and their entries stay suspect (fence
    nothing) until the interval's refresh. Counted twice: by epochgate's
    refresh counters and by the Metadata requests the brokers received
    beyond the client's own."""
    topics = ["%s%d" % (TOPIC, i) for i in range(12)]
    cluster = h.start_cluster(3, ["%s:1:3" % t for t in topics])
    for t in topics:
        cluster.cmd("leader %s 0 1" % t)
    gate = sl.start_gate(h, cluster, config="refresher:\n  urgent_min_interval_ms: 20000\n")
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12(topics)
    for t in topics:
        sl.wait_view(gate, t, 0, 1, md["topics"][t]["partitions"][0]["leader_epoch"])
    # Every leader moves first: then each report below is a move the view
    # has not learnt from anyone else.
    epochs = {t: cluster.move_leader(t, 0, 2)[1] for t in topics}
    before = sl.scrape(gate)
    cluster.cmd("track start")

    def report(t):
        md = kw.parse_metadata_response(
            gc.exchange(kw.metadata_request(gc.next_corr(), [t], version=1)), 1)
        assert md["topics"][t]["partitions"][0]["leader"] == 2, md

    waited = []
    for t in topics[:CONFIRM_BURST]:
        report(t)
        entry, w = _wait_fenceable(gate, 2, epochs[t] - 1, 5, topic=t)
        assert entry["epoch"] == epochs[t], entry
        waited.append(w * 1000)
    for t in topics[CONFIRM_BURST:]:
        report(t)
    # A window for any refresh the later reports might wrongly start; the
    # next ordinary urgent refresh is 20 s away.
    time.sleep(1.0)
    after = sl.scrape(gate)
    tracked = sum(_tracked(cluster, b, kw.API_METADATA) for b in (1, 2, 3))
    refreshes = sl.delta(after, before, sl.REFRESHES)
    assert refreshes == CONFIRM_BURST, (refreshes, after.by(sl.REFRESHES, "trigger"))
    # The mock counts every Metadata request: the client's reports and the
    # refresher's own.
    assert tracked - len(topics) == refreshes, (tracked, refreshes, cluster.cmd("track dump"))
    # Doubted by the report (the entry keeps the leader and epoch it had),
    # not yet confirmed: they fence nothing meanwhile.
    waiting = [sl.view_partition(gate, t, 0) for t in topics[CONFIRM_BURST:]]
    assert all(p["suspect"] and p["epoch"] < epochs[t]
               for p, t in zip(waiting, topics[CONFIRM_BURST:])), waiting
    h.note("%d topics reported moved by Metadata v1, one after another: the first %d confirmed "
           "at once, each by its own refresh (%s ms after its report; urgent_min_interval_ms "
           "20000), the other %d sent no refresh and wait for the interval" % (
               len(topics), CONFIRM_BURST, ", ".join("%.0f" % w for w in waited),
               len(topics) - CONFIRM_BURST))


if __name__ == "__main__":
    harness.main(globals())
