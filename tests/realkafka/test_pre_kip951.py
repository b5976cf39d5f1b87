"""epochgate in front of real Apache Kafka 3.6.2 brokers (KRaft, before
KIP-951: Produce up to v9, Fetch up to v15, no leader hints), which is what
its KIP-951 bridge and hint backfill are for, with the same requests sent
straight at the brokers as the control:

- ApiVersions: the brokers offer Produce v9 / Fetch v15; through epochgate a
  client is offered Produce v10 / Fetch v16 (kip951_bridge).
- A Produce v10 through epochgate to a follower gets NOT_LEADER_OR_FOLLOWER
  with CurrentLeader (the brokers' leader and epoch) and a NodeEndpoints
  entry at epochgate's listener; the broker's own v9 answer direct has no
  hint.
- Kafka's VerifiableProducer/VerifiableConsumer (4.4.0 tools, classic group)
  direct and through epochgate across nine PREFERRED moves, validated as
  kafkatest does (tests/realkafka/test_verifiable.py); the hints the clients
  got through epochgate include ones backfilled into the brokers' hintless
  errors, none rewritten (the brokers sent none), and requests were bridged
  (version_downgrades_total).

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_pre_kip951.py --build-dir build
"""


from epochgate_testlib import realkafka_lib as rk  # noqa: E402
import test_verifiable as tv  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, kw, sl, sw  # noqa: E402

rk.VERSION = "3.6.2"
tv.GROUP_PROTOCOL = "classic"
NOT_LEADER = 6


def _api_versions(address):
    conn = sl.connect(address)
    try:
        conn.send(kw.api_versions_request(3, 0))
        _, err, apis = kw.parse_api_versions_response(conn.recv_frame(), 0)
    finally:
        conn.close()
    assert err == 0
    return apis


def test_bridge_offers_v10_v16_on_3_6_brokers(h):
    c = rk.cluster(h)
    topic = rk.create_topic(c, "bridge36")
    gate = sl.start_gate(h, None, upstream=c.bootstrap)
    direct = _api_versions(c.broker_address(1))
    via = _api_versions(gate.bootstrap_address)
    h.note("ApiVersions Produce/Fetch: brokers %s/%s, through epochgate %s/%s" % (
        direct[0], direct[1], via[0], via[1]))
    assert direct[0][1] == 9 and direct[1][1] == 15, direct
    assert via[0][1] == 10 and via[1][1] == 16, via

    g = sl.GateClient(h, gate)
    md = g.metadata_v12([topic])
    leader, epoch = md["topics"][topic]["partitions"][0]["leader"], md["topics"][topic]["partitions"][0]["leader_epoch"]
    assert rk.leaders(c, [topic])[(topic, 0)] == (leader, epoch)
    follower = 1 + leader % 3
    before = sl.scrape(gate)

    conn = sl.connect(c.broker_address(follower))
    try:
        conn.send(sw.produce_request(21, topic, [(0, kw.record_batch([b"old"]))], -1, 9))
        pd = sw.parse_produce_response(conn.recv_frame(), 9)
    finally:
        conn.close()
    assert pd["partitions"][0][2] == NOT_LEADER and pd["partitions"][0][4] is None, pd

    # As every client does on each connection: ApiVersions first. epochgate
    # bridges a connection by what its ApiVersions exchange settled.
    g.conn(follower).send(kw.api_versions_request(g.next_corr(), 0))
    g.conn(follower).recv_frame()
    pg = sl.produce_values(g, follower, topic, 0, [b"bridged"], acks=-1, version=10)
    assert pg["partitions"][0][2] == NOT_LEADER, pg
    assert pg["partitions"][0][4] == (leader, epoch), pg
    assert pg["node_endpoints"][leader][:2] == tuple(g.brokers[leader]), (pg, g.brokers)
    after = sl.scrape(gate)
    h.note("epochgate: %s; downgrades %d" % (sl.fences_text(after),
                                             sl.delta(after, before, sl.DOWNGRADES)))
    assert sl.delta(after, before, sl.HINTS) >= 1, sl.fences_text(after)


def test_verifiable_across_moves_on_3_6_brokers(h):
    _, before, after = tv.preferred_moves(h, "moves36")
    # The brokers send no hint; the ones the clients got were epochgate's:
    # added to the brokers' hintless errors (backfilled) or its own answers.
    assert sl.delta(after, before, sl.HINTS, source="rewritten") == 0, sl.fences_text(after)
    assert sl.delta(after, before, sl.HINTS, source="backfilled") >= 1, sl.fences_text(after)
    assert sl.delta(after, before, sl.DOWNGRADES) >= 1, sl.fences_text(after)


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 400

if __name__ == "__main__":
    harness.main(globals())
