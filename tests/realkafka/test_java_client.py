"""The Java client (kafka-clients 4.4.0, the brokers' version) against a real
Apache Kafka 4.4.0 cluster, straight at the cluster and through epochgate in
the same run: idempotent producer (acks=all) with a classic and a KIP-848
consumer group, a transactional producer with read_committed and
read_uncommitted readers, the Admin client, and a KIP-932 share consumer
whose partition leader moves halfway. Each test asserts what the application
sees (counts, duplicates, order, offsets, Admin answers) is the same both
ways, and that through epochgate every connection the client opened went to
one of epochgate's ports (no upstream address reached it: Metadata,
FindCoordinator, DescribeCluster and KIP-951 NodeEndpoints all rewritten).

    PYTHONPATH=tests/lib /usr/bin/python3 tests/realkafka/test_java_client.py --build-dir build
"""


from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness  # noqa: E402


def _both(h, c, run):
    """Runs `run(bootstrap, tag)` direct and through one epochgate; returns
    (direct result, gate result, gate, gate ports)."""
    gate = h.start_gate(c.bootstrap)
    ports = rk.gate_ports(gate)
    direct, dports = run(c.bootstrap, "direct")
    via, gports = run(gate.bootstrap, "gate")
    rk.assert_ports(dports, c.broker_ports, c.broker_ports, "direct control")
    rk.assert_ports(gports, ports, c.broker_ports, "Java client through epochgate")
    return direct, via, gate, ports


def _produce_consume(h, protocol):
    c = rk.cluster(h)

    def run(bootstrap, tag):
        topic = rk.create_topic(c, "pc-%s-%s" % (protocol, tag))
        return rk.driver(h, c, ["produce-consume", "--bootstrap", bootstrap, "--topic", topic,
                                "--count", "3000", "--group", "g-%s-%s" % (protocol, tag),
                                "--protocol", protocol], "driver-" + tag)

    direct, via, _, _ = _both(h, c, run)
    for tag, r in (("direct", direct), ("epochgate", via)):
        assert r["acked"] == 3000 and r["errors"] == 0, (tag, r)
        assert r["consumed"] == 3000 and r["missing"] == 0 and r["duplicates"] == 0, (tag, r)
        assert r["offset_mismatch"] == 0 and r["out_of_order"] == 0, (tag, r)
        assert r["partitions_assigned"] == 3, (tag, r)
    h.note("%s group: direct produce %d ms consume %d ms; epochgate produce %d ms consume %d ms" % (
        protocol, direct["produce_ms"], direct["consume_ms"], via["produce_ms"], via["consume_ms"]))


def test_idempotent_producer_classic_group(h):
    _produce_consume(h, "classic")


def test_idempotent_producer_consumer_protocol_group(h):
    _produce_consume(h, "consumer")


def test_transactions_read_committed(h):
    c = rk.cluster(h)

    def run(bootstrap, tag):
        topic = rk.create_topic(c, "txn-" + tag)
        return rk.driver(h, c, ["txn", "--bootstrap", bootstrap, "--topic", topic,
                                "--txn-id", "tx-" + tag], "driver-" + tag)

    direct, via, _, _ = _both(h, c, run)
    for tag, r in (("direct", direct), ("epochgate", via)):
        assert r["committed"] == 200 and r["aborted"] == 50, (tag, r)
        assert r["rc_commit_values"] == 200 and r["rc_abort_values"] == 0, (tag, r)
        assert r["ru_commit_values"] == 200 and r["ru_abort_values"] == 50, (tag, r)
    features = c.ctl("features")["finalized"]
    h.note("finalized features: %s" % features)
    assert features.get("transaction.version", 0) >= 2, features


def test_admin_client(h):
    c = rk.cluster(h)

    def run(bootstrap, tag):
        return rk.driver(h, c, ["admin", "--bootstrap", bootstrap, "--topic", "adm-" + tag,
                                "--group", "ag-" + tag], "driver-" + tag)

    direct, via, gate, ports = _both(h, c, run)
    # What an operator reads must not depend on the path, except the ports.
    strip = ("node_ports", "leader_ports", "controller_port", "group_coordinator_port")
    same = {k: v for k, v in direct.items() if k not in strip}
    assert same == {k: v for k, v in via.items() if k not in strip}, (direct, via)
    assert direct["node_ids"] == [1, 2, 3] and direct["partitions"] == 3, direct
    assert direct["consumed"] == 30 and direct["committed_sum"] == 30, direct
    assert direct["altered_offset"] == 1 and direct["elect"] == "ElectionNotNeededException", direct
    assert direct["retention_ms"] == "3600000" and direct["min_isr"] == "2", direct
    for k in strip:
        got = via[k] if isinstance(via[k], list) else [via[k]]
        assert set(got) <= ports, "Admin %s through epochgate %s not epochgate's %s" % (k, got, ports)
        want = direct[k] if isinstance(direct[k], list) else [direct[k]]
        assert set(want) <= set(c.broker_ports), (k, want)


def test_share_consumer_release_and_leader_move(h):
    c = rk.cluster(h)

    def run(bootstrap, tag):
        topic = rk.create_topic(c, "share-" + tag, partitions=1)
        before = rk.leaders(c, [topic])[(topic, 0)]
        target = 1 + before[0] % 3
        r, ports = rk.driver(h, c, ["share", "--bootstrap", bootstrap, "--topic", topic,
                             "--group", "sg-" + tag, "--count", "400", "--release", "40",
                             "--mover", c.bootstrap, "--move-to", str(target)], "driver-" + tag)
        after = rk.leaders(c, [topic])[(topic, 0)]
        r["leader_before"], r["leader_after"] = before, after
        return r, ports

    direct, via, _, _ = _both(h, c, run)
    for tag, r in (("direct", direct), ("epochgate", via)):
        assert r["accepted"] == 400 and r["accepted_twice"] == 0, (tag, r)
        assert r["released"] == 40 and r["redelivered"] >= 40, (tag, r)
        assert r["move"].startswith("moved:"), (tag, r)
        assert r["leader_after"][1] == r["leader_before"][1] + 1, (tag, r)
    # Across the move an acknowledgement commit sent to the old leader may
    # fail (NotLeaderOrFollower, UnknownTopicOrPartition), straight at the
    # cluster too; a share session the broker lost (ShareSessionNotFound,
    # InvalidShareSessionEpoch) must not show through epochgate unless it
    # shows directly.
    if "ShareSession" in via.get("first_commit_error", ""):
        assert "ShareSession" in direct.get("first_commit_error", ""), (direct, via)
    h.note("share: direct %d ms (commit errors %d %s), epochgate %d ms (commit errors %d %s)" % (
        direct["ms"], direct["commit_errors"], direct.get("first_commit_error", ""), via["ms"],
        via["commit_errors"], via.get("first_commit_error", "")))


for _f in list(globals().values()):
    if callable(_f) and getattr(_f, "__name__", "").startswith("test_"):
        _f.timeout = 400

if __name__ == "__main__":
    harness.main(globals())
