"""librdkafka 2.15.1 (epochgate-rdkafka-check) through epochgate: an
idempotent acks=all producer and a consumer group account for every record
exactly once and in order per partition; transactions commit (visible to
read_committed readers) and abort (invisible)."""

import os

from epochgate_testlib import harness  # noqa: E402


def _debug_args(h, name):
    """librdkafka broker-level debug into a log, to see every address dialled."""
    return ["--debug", "broker", "--log-file", os.path.join(h.workdir, name + ".rdkafka.log")]


def test_idempotent_keyed_10000_consumed_in_group_exactly_once(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    bootstrap, _ = h.front(cluster)
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "orders", "--messages", "10000",
                         "--partitions-keyed", "--idempotent", "--acks", "all",
                         "--consume-group", "check-group", "--deadline-s", "60"]
                        + _debug_args(h, "check"))
    # Producer, group coordinator and partition leaders: all via epochgate.
    h.assert_only_front_connections(os.path.join(h.workdir, "check.rdkafka.log"), cluster)
    assert s["acked"] == 10000 and s["consumed"] == 10000, s
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["misplaced"] == 0, s
    assert sorted(s["acked_by_partition"]) == ["0", "1", "2"], s["acked_by_partition"]
    h.note("10000 acked in %.2fs, delivery latency p50 %.1f ms p99 %.1f ms max %.1f ms" % (
        s["seconds"], s["latency_ms"]["p50"], s["latency_ms"]["p99"], s["latency_ms"]["max"]))


def test_transaction_commit_visible_to_read_committed_group(h):
    cluster = h.start_cluster(3, ["txn-commit:3:3"])
    bootstrap, _ = h.front(cluster)
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "txn-commit", "--messages", "2000",
                         "--partitions-keyed", "--transactional", "commit",
                         "--consume-group", "txn-commit-group"] + _debug_args(h, "txn"))
    assert s["acked"] == 2000 and s["consumed"] == 2000 and s["missing"] == 0, s
    # Transaction coordinator included (FindCoordinator key type 1).
    h.assert_only_front_connections(os.path.join(h.workdir, "txn.rdkafka.log"), cluster)


def test_transaction_abort_invisible_to_read_committed_reader(h):
    # The mock cluster's Fetch never reports aborted transactions (it always
    # answers an empty AbortedTransactions list), so a read_committed consumer
    # group would see aborted records even from a real-broker point of view.
    # Its share groups do filter them at read_committed, so the abort is read
    # back through a share group; a committed marker transaction written after
    # the abort proves the reader got past the aborted range.
    cluster = h.start_cluster(3, ["txn-abort:3:3"], args=[
        "--rebalance-delay-ms", "0", "--share-offset-reset", "earliest",
        "--share-isolation", "read_committed"])
    bootstrap, _ = h.front(cluster)
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "txn-abort", "--messages", "1000",
                         "--partitions-keyed", "--transactional", "abort",
                         "--share-group", "txn-abort-share"])
    assert s["acked"] == 1000, s
    assert s["consumed"] == 0 and s["unexpected"] == 0, s
    # The same reader does see a committed transaction on the same topic.
    s = h.rdkafka_check(["--bootstrap", bootstrap, "--topic", "txn-abort", "--messages", "500",
                         "--partitions-keyed", "--transactional", "commit",
                         "--share-group", "txn-abort-share-2"])
    assert s["consumed"] == 500 and s["missing"] == 0, s


if __name__ == "__main__":
    harness.main(globals())
