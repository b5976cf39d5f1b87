"""Observe mode and a view that is behind the cluster.

7. Observe mode (a config rule for topics `watch*`): requests epochgate would
   fence cross to the broker byte-identical and the broker's answers come
   back byte-identical (a recording relay between epochgate and the broker
   shows both sides; a Produce is compared with the same frame sent straight
   to the broker), while fenced_partitions_total{mode="observe"} counts them
   and no epoch is injected. The same stale request on an enforce topic is
   answered by epochgate (control).
8. View behind the client: the leader moved and the client learned it
   without epochgate (another epochgate replica, a direct Metadata), so the
   client's request is newer than epochgate's view: nothing is fenced, the
   broker answers, and epochgate refreshes its view.
"""

import re
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402
from epochgate_testlib.tcp_relay import TcpRelay  # noqa: E402

OBSERVE_CONFIG = """\
policy:
  default_mode: enforce
  rules:
    - topics: "watch*"
      mode: observe
"""
LEADER = 1


def _relayed(relay, corr, request_bytes=None):
    """(request frame, response frame) with correlation id `corr` that
    crossed the relay, or None."""
    for to_up, to_down in relay.snapshots():
        req = next((f for f in sw.frames_of(to_up)
                    if kw.frame_correlation_id(f, is_request=True) == corr), None)
        if req is None:
            continue
        resp = next((f for f in sw.frames_of(to_down)
                     if kw.frame_correlation_id(f, is_request=False) == corr), None)
        if resp is not None:
            return req, resp
    return None


def test_observe_mode_forwards_every_byte_and_counts(h):
    cluster = h.start_cluster(3, ["watch:3:3", "guard:3:3"])
    for topic in ("watch", "guard"):
        cluster.cmd("leader %s 0 %d" % (topic, LEADER))
        cluster.cmd("leader %s 0 %d" % (topic, LEADER))  # epoch moves on: older ones are stale
    relay = TcpRelay(cluster.broker_address(LEADER))
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, config=OBSERVE_CONFIG, upstream=relay.address)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12(["watch", "guard"])
    epoch = {t: md["topics"][t]["partitions"][0]["leader_epoch"] for t in ("watch", "guard")}
    topic_id = {t: bytes.fromhex(md["topics"][t]["topic_id"]) for t in ("watch", "guard")}
    for t in ("watch", "guard"):
        sl.wait_view(gate, t, 0, LEADER, epoch[t])
    before = sl.scrape(gate)
    checked = []

    # Stale CurrentLeaderEpoch, Fetch v12 and v16 (v16 responses carry hint
    # fields epochgate could fill): forwarded and answered byte for byte.
    for version in (12, 16):
        corr = gc.next_corr()
        ref = "watch" if version < 13 else topic_id["watch"]
        frame = sw.fetch_request(corr, ref, [(0, epoch["watch"] - 1, 0)], version=version)
        got = gc.exchange(frame)
        seen = harness.wait_until(lambda: _relayed(relay, corr), 5,
                                  what="Fetch v%d at the broker" % version)
        assert seen[0] == frame, "observe: the Fetch v%d request changed on its way" % version
        assert seen[1] == got, "observe: the Fetch v%d response changed on its way back" % version
        part = sw.parse_fetch_response(got, version)["partitions"][(ref, 0)]
        assert part["error"] == sw.FENCED_LEADER_EPOCH, part  # the broker's own answer
        checked.append("Fetch v%d stale epoch" % version)
    # Epoch -1: not injected in observe mode.
    corr = gc.next_corr()
    frame = sw.fetch_request(corr, "watch", [(0, -1, 0)], version=12)
    got = gc.exchange(frame)
    seen = harness.wait_until(lambda: _relayed(relay, corr), 5, what="Fetch -1 at the broker")
    assert seen == (frame, got), "observe: a Fetch with epoch -1 changed"
    checked.append("Fetch v12 epoch -1")

    # Produce to a broker that is not the leader (v8: no hint fields), through
    # epochgate's listener of broker 2 and straight to broker 2: same bytes.
    other = sl.other_broker(LEADER)
    gc.metadata([])
    frame = sw.produce_request(0x0B5E, "watch", [(0, kw.record_batch([b"o"], 1700000000000))],
                               acks=-1, version=8)
    through = gc.exchange(frame, node=other)
    direct_conn = sl.connect(cluster.broker_address(other))
    h.on_close(direct_conn.close)
    direct_conn.send(frame)
    direct = direct_conn.recv_frame()
    assert through == direct, "observe: Produce response differs from the broker's:\n%r\n%r" % (
        through, direct)
    assert sw.parse_produce_response(through, 8)["partitions"][0][2] == sw.NOT_LEADER_OR_FOLLOWER
    checked.append("Produce v8 to a follower")
    after = sl.scrape(gate)

    observed = {(l["api"], l["reason"]): v for l, v in after.rows(sl.FENCED)
                if l.get("mode") == "observe"}
    assert observed.get(("fetch", "stale_epoch")) == 2, observed
    assert observed.get(("produce", "not_leader")) == 1, observed
    assert sl.delta(after, before, sl.FENCED, mode="enforce") == 0, sl.fences_text(after)
    assert sl.delta(after, before, sl.INJECTED) == 0
    assert sl.delta(after, before, sl.HINTS) == 0, sl.fences_text(after)

    # Control: the same stale Fetch on an enforce topic is answered by epochgate.
    corr = gc.next_corr()
    got = gc.exchange(sw.fetch_request(corr, "guard", [(0, epoch["guard"] - 1, 0)], version=12))
    assert sw.parse_fetch_response(got, 12)["partitions"][("guard", 0)]["error"] == \
        sw.FENCED_LEADER_EPOCH
    time.sleep(0.2)
    assert _relayed(relay, corr) is None, "enforce: the stale Fetch reached the broker"
    final = sl.scrape(gate)
    assert sl.delta(final, after, sl.FENCED, api="fetch", mode="enforce") == 1
    # The log says which client and topic each fence affects (what enforce
    # would change for whom); the v16 Fetch named its topic by id.
    with open(gate.proc.log_path, errors="replace") as f:
        log = f.read()
    client = r"client=127\.0\.0\.1:\d+ client_id=epochgate-wire-test node=-?\d+"
    would = re.findall(r"would fence \(observe\) api=Fetch %s topic=watch partition=0 " % client,
                       log)
    assert len(would) == 2, log[-3000:]
    assert re.search(r"would fence \(observe\) api=Produce %s topic=watch partition=0 " % client,
                     log), log[-3000:]
    assert re.search(r"\] fenced api=Fetch %s topic=guard partition=0 " % client, log), log[-3000:]
    h.note("observe: %s crossed byte-identical both ways; fenced_partitions_total{mode=observe} "
           "%s; enforce control answered locally" % (", ".join(checked), observed))


def test_view_behind_client_fetch_with_newer_epoch_is_not_fenced(h):
    cluster = h.start_cluster(3, ["behind:3:3"])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata(["behind"])
    p0 = md["topics"]["behind"]["partitions"][0]
    sl.wait_view(gate, "behind", 0, p0["leader"], p0["leader_epoch"])
    new = sl.other_broker(p0["leader"])
    # The client learns the move straight from the cluster; epochgate does not.
    moved_us, epoch = cluster.move_leader("behind", 0, new)
    assert sl.view_partition(gate, "behind", 0)["epoch"] == p0["leader_epoch"]
    before = sl.scrape(gate)
    r = sw.parse_fetch_response(gc.exchange(
        sw.fetch_request(gc.next_corr(), "behind", [(0, epoch, 0)], version=12), node=new), 12)
    after = sl.scrape(gate)
    assert r["partitions"][("behind", 0)]["error"] == 0, r
    assert sl.delta(after, before, sl.FENCED) == 0, sl.fences_text(after)
    # The request told epochgate its view is behind: it refreshes.
    caught_up = sl.wait_view(gate, "behind", 0, new, epoch, timeout=3)
    final = sl.scrape(gate)
    h.note("Fetch v12 with epoch %d (view %d) on the new leader %d: answered by the broker, "
           "nothing fenced; view caught up to %d/%d via %s; refreshes %s" % (
               epoch, p0["leader_epoch"], new, caught_up["leader"], caught_up["epoch"],
               caught_up["source"], final.by(sl.REFRESHES, "trigger")))


def test_view_behind_client_produce_to_new_leader_is_not_fenced(h):
    cluster = h.start_cluster(3, ["behind:3:3"])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata(["behind"])
    p0 = md["topics"]["behind"]["partitions"][0]
    sl.wait_view(gate, "behind", 0, p0["leader"], p0["leader_epoch"])
    new = sl.other_broker(p0["leader"])
    moved_us, epoch = cluster.move_leader("behind", 0, new)
    start = sl.end_offset(cluster, "behind", 0)
    before = sl.scrape(gate)
    # A Produce carries no epoch: only "this broker is not the leader in my
    # view" tells epochgate anything, and here the view is the stale side.
    r = sw.parse_produce_response(gc.exchange(sw.produce_request(
        gc.next_corr(), "behind", [(0, kw.record_batch([b"ahead"]))], acks=-1, version=10),
        node=new), 10)
    after = sl.scrape(gate)
    _, _, err, base, hint = r["partitions"][0]
    assert sl.delta(after, before, sl.FENCED) == 0 and err == 0, (
        "Produce v10 to the new leader %d (epoch %d), which epochgate's %d-ms-old view still "
        "places on %d (epoch %d): error %d, hint %s; %s" % (
            new, epoch, sl.view_partition(gate, "behind", 0)["age_ms"], p0["leader"],
            p0["leader_epoch"], err, hint, sl.fences_text(after)))
    assert sl.read_partition(h, cluster, "behind", 0, start=start) == ["ahead"]
    h.note("Produce v10 to the new leader %d before epochgate learned the move: written at "
           "offset %d, nothing fenced" % (new, base))


if __name__ == "__main__":
    harness.main(globals())
