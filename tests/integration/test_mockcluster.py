"""epochgate-mockcluster itself: the commands scenario tests rely on do what
they say, observed on the wire with kafka_wire.py (no epochgate involved).
Leader moves bump the leader epoch, pushed KIP-951 leader responses show up
once, brokers go down and up, topics come and go, API versions are capped,
errors are injected, latency is added, and the program ends cleanly."""

import os
import signal
import socket
import subprocess
import time

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402


def _metadata(cluster, topics, broker=1):
    conn = kw.Connection(*cluster.broker_address(broker), timeout=5)
    try:
        conn.send(kw.metadata_request(11, topics, version=7))
        return kw.parse_metadata_response(conn.recv_frame(), 7)
    finally:
        conn.close()


def _partition(cluster, topic, partition):
    return _metadata(cluster, [topic])["topics"][topic]["partitions"][partition]


def test_bootstrap_line_and_brokers(h):
    cluster = h.start_cluster(3, ["orders:3:3", "other:16:1"])
    assert len(cluster.ports) == 3 and len(set(cluster.ports)) == 3
    assert all(host == "127.0.0.1" for host, _ in cluster.addresses)
    assert cluster.cmd("brokers") == "OK " + cluster.bootstrap
    md = _metadata(cluster, ["orders", "other"])
    assert {b: p for b, (_, p, _) in md["brokers"].items()} == dict(zip([1, 2, 3], cluster.ports))
    assert len(md["topics"]["orders"]["partitions"]) == 3
    assert len(md["topics"]["other"]["partitions"]) == 16
    assert all(len(p["replicas"]) == 3 for p in md["topics"]["orders"]["partitions"].values())


def test_leader_move_bumps_epoch(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    p0 = _partition(cluster, "orders", 0)
    epoch = p0["leader_epoch"]
    assert epoch >= 0 and p0["leader"] in (1, 2, 3), p0
    target = 2 if p0["leader"] != 2 else 3
    cluster.cmd("leader orders 0 %d" % target)
    p0 = _partition(cluster, "orders", 0)
    assert (p0["leader"], p0["leader_epoch"]) == (target, epoch + 1), p0
    cluster.cmd("leader orders 0 %d" % target)  # same leader, new term
    assert _partition(cluster, "orders", 0)["leader_epoch"] == epoch + 2
    cluster.cmd("leader orders 0 -1")  # leaderless
    assert _partition(cluster, "orders", 0)["leader"] == -1
    assert cluster.cmd("leader orders 0 9", allow_error=True).startswith("ERR")
    assert cluster.cmd("leader orders 7 1", allow_error=True).startswith("ERR")


def test_leader_timed_dates_the_move_on_the_callers_clock(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    p0 = _partition(cluster, "orders", 0)
    target = 2 if p0["leader"] != 2 else 3
    sent = time.monotonic_ns()
    words = cluster.cmd("leader-timed orders 0 %d" % target).split()
    answered = time.monotonic_ns()
    assert words[0] == "OK" and len(words) == 3, words
    before, after = int(words[1]), int(words[2])
    assert sent <= before <= after <= answered, (sent, before, after, answered)
    moved = _partition(cluster, "orders", 0)
    assert (moved["leader"], moved["leader_epoch"]) == (target, p0["leader_epoch"] + 1), moved
    assert cluster.cmd("leader-timed orders 0 9", allow_error=True).startswith("ERR")


def test_push_leader_response_shows_once(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    real = _partition(cluster, "orders", 1)
    cluster.cmd("push-leader-response orders 1 3 %d" % (real["leader_epoch"] + 5))
    pushed = _partition(cluster, "orders", 1)
    assert (pushed["leader"], pushed["leader_epoch"]) == (3, real["leader_epoch"] + 5), pushed
    again = _partition(cluster, "orders", 1)
    assert (again["leader"], again["leader_epoch"]) == (real["leader"], real["leader_epoch"])


def test_down_and_up(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    cluster.cmd("down 2")
    host, port = cluster.broker_address(2)
    refused = False
    try:
        conn = kw.Connection(host, port, timeout=2)
        conn.send(kw.api_versions_request(5))
        conn.recv_frame(timeout=2)
    except (OSError, kw.WireError):
        refused = True
    assert refused, "broker 2 still answered while down"
    cluster.cmd("up 2")

    def answers():
        try:
            conn = kw.Connection(host, port, timeout=2)
            conn.send(kw.api_versions_request(6))
            ok = kw.frame_correlation_id(conn.recv_frame(timeout=2), False) == 6
            conn.close()
            return ok
        except (OSError, kw.WireError):
            return False

    harness.wait_until(answers, 5, what="broker 2 to answer after up")


def test_create_delete_topic(h):
    cluster = h.start_cluster(2)
    cluster.cmd("create fresh 4 2")
    t = _metadata(cluster, ["fresh"])["topics"]["fresh"]
    assert t["error"] == 0 and len(t["partitions"]) == 4
    cluster.cmd("delete fresh")
    assert _metadata(cluster, ["fresh"])["topics"]["fresh"]["error"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    assert cluster.cmd("delete fresh", allow_error=True).startswith("ERR")


def test_apiversion_cap_and_push_errors_and_rtt(h):
    cluster = h.start_cluster(3, ["orders:3:3"])
    cluster.cmd("apiversion Produce 0 9")
    cluster.cmd("apiversion 1 0 15")
    conn = kw.Connection(*cluster.broker_address(1), timeout=5)
    h.on_close(conn.close)
    conn.send(kw.api_versions_request(1))
    _, error, apis = kw.parse_api_versions_response(conn.recv_frame(), 0)
    assert error == 0 and apis[kw.API_PRODUCE] == (0, 9) and apis[kw.API_FETCH] == (0, 15), apis
    cluster.cmd("push-errors Heartbeat REBALANCE_IN_PROGRESS 1")
    conn.send(kw.heartbeat_request(2, "g"))
    _, r = kw.response_body(conn.recv_frame())
    assert r.int16() == 27
    conn.send(kw.heartbeat_request(3, "g"))
    _, r = kw.response_body(conn.recv_frame())
    assert r.int16() != 27, "the injected error should apply once"
    cluster.cmd("rtt 1 300")
    t0 = time.monotonic()
    conn.send(kw.api_versions_request(4))
    conn.recv_frame()
    assert time.monotonic() - t0 >= 0.28, "rtt not applied"
    cluster.cmd("rtt 1 0")
    cluster.cmd("track start")
    conn.send(kw.api_versions_request(5))
    conn.recv_frame()
    assert "1:18=" in cluster.cmd("track dump")


def test_bad_commands_and_clean_exit(h):
    cluster = h.start_cluster(1)
    for bad in ("bogus", "leader x", "rtt a b", "create t 0 1", "push-errors Nope 6"):
        reply = cluster.cmd(bad, allow_error=True)
        assert reply.startswith("ERR "), (bad, reply)
    assert cluster.cmd("help").startswith("OK leader")
    assert cluster.proc.stop(signal.SIGTERM, timeout=5) == 0
    # stdin EOF ends it too.
    proc = subprocess.Popen([h.tool("epochgate-mockcluster"), "--brokers", "1"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    assert proc.stdout.readline().startswith(b"BOOTSTRAP 127.0.0.1:")
    proc.stdin.close()
    try:
        assert proc.wait(timeout=5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


def test_leader_move_under_steady_produce_timeline(h):
    # The scenario tools end to end, straight at the cluster (a baseline: the
    # mock itself sends KIP-951 hints): a steady idempotent producer and a
    # concurrent consumer group while partition 0's leader moves.
    cluster = h.start_cluster(3, ["steady:3:3"])
    timeline = os.path.join(h.workdir, "timeline.csv")
    check = h.rdkafka_check_async([
        "--bootstrap", cluster.bootstrap, "--topic", "steady", "--partitions-keyed",
        "--idempotent", "--duration-s", "3", "--rate", "500", "--concurrent",
        "--consume-group", "steady-group", "--timeline", timeline])
    time.sleep(1.0)
    old = cluster.partition("steady", 0)["leader"]
    new = 1 + old % 3
    moved_us, epoch = cluster.move_leader("steady", 0, new)
    s = check.result(timeout=60)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    rows = harness.read_timeline(timeline)
    assert len(rows) == s["produced"]
    recovery = harness.recovery_ms(rows, moved_us, 0, new)
    assert recovery is not None, "no delivery acknowledged by the new leader %d" % new
    h.note("leader %d->%d (epoch %d): first ack from the new leader %.1f ms after the move; "
           "p99 %.1f ms max %.1f ms over %d messages" % (
               old, new, epoch, recovery, s["latency_ms"]["p99"], s["latency_ms"]["max"],
               s["acked"]))


if __name__ == "__main__":
    harness.main(globals(), needs_epochgate=False)
