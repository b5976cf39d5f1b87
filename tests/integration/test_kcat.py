"""kcat (Debian, librdkafka-based) through epochgate: the metadata a client
sees names only epochgate's listeners, and records go in and come back out
unchanged. With --direct the same checks run against the mock cluster and
the address check is inverted (it must see the cluster's own ports), which
proves the check can tell the difference."""

import json

from epochgate_testlib import harness  # noqa: E402


def kcat_metadata(h, bootstrap, topic=None):
    args = ["-b", bootstrap, "-L", "-J", "-m", "10"]
    if topic:
        args += ["-t", topic]
    return json.loads(h.kcat(args).stdout)


def test_metadata_lists_only_epochgate_addresses(h):
    cluster = h.start_cluster(3, ["orders:3:3", "other:16:1"])
    bootstrap, gate = h.front(cluster)
    result = h.kcat(["-b", bootstrap, "-L"])
    md = kcat_metadata(h, bootstrap)
    listed = {b["id"]: harness.parse_hostport(b["name"]) for b in md["brokers"]}
    assert sorted(listed) == [1, 2, 3], "node ids must be unchanged: %s" % listed
    for node, (host, _) in listed.items():
        assert host == harness.LOOPBACK, "broker %d advertised as %s" % (node, host)
    mock_ports = set(cluster.ports)
    listed_ports = {port for _, port in listed.values()}
    if h.direct:
        # Control: straight at the cluster, its own ports must show up.
        assert listed_ports == mock_ports, (listed_ports, mock_ports)
        return
    assert not listed_ports & mock_ports, "upstream ports leaked: %s" % (listed_ports & mock_ports)
    for port in mock_ports:
        assert ":%d" % port not in result.stdout, "mock port %d in kcat -L output:\n%s" % (
            port, result.stdout)
        assert str(port) not in json.dumps(md), "mock port %d in kcat -L -J output" % port
    # Every advertised listener answers as the broker it names.
    for node, (host, port) in listed.items():
        per_broker = kcat_metadata(h, "%s:%d" % (host, port), "orders")
        assert {b["id"] for b in per_broker["brokers"]} == {1, 2, 3}
        assert not {harness.parse_hostport(b["name"])[1]
                    for b in per_broker["brokers"]} & mock_ports
    # Topic layout (leaders, replicas) is what the cluster says.
    direct = kcat_metadata(h, cluster.bootstrap, "orders")
    through = kcat_metadata(h, bootstrap, "orders")

    def layout(m):
        t = [t for t in m["topics"] if t["topic"] == "orders"][0]
        return {p["partition"]: (p["leader"], sorted(r["id"] for r in p["replicas"]))
                for p in t["partitions"]}

    assert layout(direct) == layout(through), (layout(direct), layout(through))


def test_produce_then_consume_exact_payloads(h):
    cluster = h.start_cluster(3, ["kcat-roundtrip:3:3"])
    bootstrap, _ = h.front(cluster)
    payloads = [("key%d" % i, "value-%d-%s" % (i, "x" * (i * 37 % 500))) for i in range(300)]
    payloads.append(("big", "B" * 300000))  # spans many TCP reads and one large frame
    payloads.append(("unicode", "h\u00e9llo \u2603 w\u00f6rld"))
    lines = "".join("%s\t%s\n" % kv for kv in payloads).encode()
    h.kcat(["-b", bootstrap, "-P", "-t", "kcat-roundtrip", "-K", "\t",
            "-X", "acks=all", "-X", "message.max.bytes=1000000"], input=lines, timeout=60)
    out = h.kcat(["-b", bootstrap, "-C", "-t", "kcat-roundtrip", "-o", "beginning", "-e",
                  "-f", "%p\t%o\t%k\t%s\n", "-X", "fetch.message.max.bytes=2000000"],
                 timeout=60).stdout
    got = []
    for line in out.splitlines():
        partition, offset, key, value = line.split("\t", 3)
        got.append((int(partition), int(offset), key, value))
    assert sorted((k, v) for _, _, k, v in got) == sorted(payloads), \
        "records differ: sent %d, got %d" % (len(payloads), len(got))
    # Same key -> same partition, in produce order.
    by_key = {}
    for partition, offset, key, value in sorted(got):
        by_key.setdefault(key, []).append((partition, value))
    sent_by_key = {}
    for key, value in payloads:
        sent_by_key.setdefault(key, []).append(value)
    for key, entries in by_key.items():
        assert len({p for p, _ in entries}) == 1, "key %s on several partitions" % key
        assert [v for _, v in entries] == sent_by_key[key], "order broken for key %s" % key
    h.note("%d records (largest 300000 bytes) over %d partitions" % (
        len(got), len({p for p, _, _, _ in got})))


if __name__ == "__main__":
    harness.main(globals())
