"""kafka-python and confluent-kafka (Debian's python3-kafka 2.0.2 and
python3-confluent-kafka on librdkafka 2.0.2: older protocol versions than
librdkafka 2.15.1) produce and consume through epochgate; every acked record
comes back exactly once, in order per partition."""


from epochgate_testlib import harness  # noqa: E402


def _round_trip(h, client, topic):
    cluster = h.start_cluster(3, ["%s:3:3" % topic])
    bootstrap, _ = h.front(cluster)
    r = h.python_peer([client, "--bootstrap", bootstrap, "--topic", topic,
                       "--messages", "500", "--timeout", "40"])
    assert r["passed"] and r["returncode"] == 0, r
    assert r["partitions"] == [0, 1, 2], "keys should spread over all partitions: %s" % r
    h.note("%s %s%s: %d/%d in %.2fs" % (
        client, r.get("version"),
        " (api_version %s)" % r["api_version"] if "api_version" in r else
        " (librdkafka %s)" % r.get("librdkafka"),
        r["consumed"], r["produced"], r["seconds"]))


def test_kafka_python_produce_consume(h):
    _round_trip(h, "kafka-python", "kafka-python-topic")


def test_confluent_kafka_produce_consume(h):
    _round_trip(h, "confluent-kafka", "confluent-topic")


if __name__ == "__main__":
    harness.main(globals())
