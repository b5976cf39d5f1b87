"""The share-group persister APIs (keys 83-87).

No client sends these (a broker's share-partition leader sends them to the
share coordinator), so the decision table is pinned down from encoded frames
in tests/policy/persister_frames_test.cc (unit label). This file checks the
wiring end to end: a ReadShareGroupState / WriteShareGroupState v0 frame
whose LeaderEpoch is older than epochgate's view, sent to epochgate's
listener, comes back as one local answer with FENCED_LEADER_EPOCH for that
partition and the sender's correlation id, counted under api
read_share_group_state / write_share_group_state. (The mock cluster does not
implement these APIs, so only requests epochgate answers itself are sent.)
"""


from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "state"
READ_SHARE_GROUP_STATE = 84
WRITE_SHARE_GROUP_STATE = 85


def _read_state_request(corr, group, topic_id, partitions):
    w = sw.FlexWriter().compact_string(group)

    def part(w, p):
        w.int32(p[0]).int32(p[1]).empty_tags()

    w.compact_array([topic_id], lambda w, t: w.raw(t).compact_array(partitions, part)
                    .empty_tags())
    w.empty_tags()
    return kw.request_frame(READ_SHARE_GROUP_STATE, 0, corr, w.getvalue(), flexible=True)


def _write_state_request(corr, group, topic_id, partitions):
    w = sw.FlexWriter().compact_string(group)

    def part(w, p):
        w.int32(p[0]).int32(0).int32(p[1]).int64(0)
        w.compact_array([(0, 9, 2, 1)], lambda w, b: w.int64(b[0]).int64(b[1]).int8(b[2])
                        .int16(b[3]).empty_tags())
        w.empty_tags()

    w.compact_array([topic_id], lambda w, t: w.raw(t).compact_array(partitions, part)
                    .empty_tags())
    w.empty_tags()
    return kw.request_frame(WRITE_SHARE_GROUP_STATE, 0, corr, w.getvalue(), flexible=True)


def _results(frame, read):
    """{partition: error code} of a Read/WriteShareGroupState v0 response."""
    r = sw.FlexReader(frame[4:])
    corr = r.int32()
    r.tags()
    out = {}

    def batch(r):
        r.int64()
        r.int64()
        r.int8()
        r.int16()
        r.tags()

    def part(r):
        p, err = r.int32(), r.int16()
        r.compact_string()
        if read:
            r.int32()
            r.int64()
            r.compact_array(batch)
        r.tags()
        out[p] = err

    def topic(r):
        r._take(16)
        r.compact_array(part)
        r.tags()

    r.compact_array(topic)
    r.tags()
    return corr, out


def test_persister_frames_with_stale_leader_epoch_answered_by_epochgate(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    leader = cluster.partition(TOPIC, 1)["leader"]
    cluster.cmd("leader %s 1 %d" % (TOPIC, leader))  # epoch 1: 0 is now stale
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([TOPIC])["topics"][TOPIC]
    topic_id = bytes.fromhex(md["topic_id"])
    epoch = md["partitions"][1]["leader_epoch"]
    sl.wait_view(gate, TOPIC, 1, leader, epoch)
    gc.metadata([])
    before = sl.scrape(gate)
    for api, make, read in ((READ_SHARE_GROUP_STATE, _read_state_request, True),
                            (WRITE_SHARE_GROUP_STATE, _write_state_request, False)):
        corr = 0x7E000 + api
        frame = make(corr, "share-group", topic_id, [(1, epoch - 1)])
        got_corr, errors = _results(gc.exchange(frame, node=leader), read)
        assert got_corr == corr and errors == {1: sw.FENCED_LEADER_EPOCH}, (api, got_corr, errors)
    after = sl.scrape(gate)
    for label in ("read_share_group_state", "write_share_group_state"):
        assert sl.delta(after, before, sl.FENCED, api=label, reason="stale_epoch",
                        mode="enforce") == 1, sl.fences_text(after)
    assert sl.delta(after, before, sl.HINTS) == 0  # the persister responses carry no hints
    h.note("ReadShareGroupState and WriteShareGroupState v0 with LeaderEpoch %d (view %d): "
           "FENCED_LEADER_EPOCH answered by epochgate; decision table: "
           "tests/policy/persister_frames_test.cc" % (epoch - 1, epoch))


if __name__ == "__main__":
    harness.main(globals())
