"""epochgate's internal Kafka client (proxy/client/kafka_client.h), driven by
tools/kclient (epochgate-kclient: one command per stdin line, one JSON line
per event) against librdkafka 2.15.1's mock cluster and the faults rig.

- A typed Metadata answer says what the cluster itself says (kafka_wire's
  own parse, straight from the broker), at the highest version both the
  broker (its own ApiVersions answer) and the codec support.
- A version cap on the broker or the caller moves the version; no common
  version is an error, never a request the broker cannot read.
- A Produce through the per-node pool is stored (kcat reads it back, with
  CRC checks on) and a broker's error code (NOT_LEADER_OR_FOLLOWER on a
  follower, an injected NOT_ENOUGH_REPLICAS) reaches the caller in the
  typed response.
- A slow broker ends in a timeout callback, a broker going down
  mid-request in a disconnect callback, a blackholed broker in a connect
  failure within the connect timeout; the next request works again.
- Outstanding requests are bounded; acks=0 Produce expects no answer.
Must never bind anything but 127.0.0.1 or wait without a deadline."""

import json
import time

from faults_common import harness, kw  # noqa: E402
from scripted_broker import ScriptedBroker  # noqa: E402
from test_upstream_dialer import NeverAcceptingBroker  # noqa: E402

TOPIC = "kclient"
API_PRODUCE = 0
API_METADATA = 3
CODEC_MAX = {API_PRODUCE: 12, API_METADATA: 13}  # codec/schema (Produce v13 names topics by id)
NOT_LEADER_OR_FOLLOWER = 6
NOT_ENOUGH_REPLICAS = 19


class KClient:
    """epochgate-kclient as a child process."""

    def __init__(self, h, bootstrap, *args):
        argv = [h.tool("epochgate-kclient"), "--bootstrap", bootstrap] + [str(a) for a in args]
        self.proc = harness.Process("kclient", argv, h.workdir, stdin=True)
        h._processes.append(self)  # stopped at the end whatever happens
        h.on_close(self.quit)
        assert self.event(10)["ready"]

    def event(self, timeout):
        return json.loads(self.proc.read_line(timeout))

    def cmd(self, line):
        """Sends one command; returns the accepted/refused event."""
        self.proc.proc.stdin.write((line + "\n").encode())
        self.proc.proc.stdin.flush()
        return self.event(10)

    def call(self, line, timeout=20):
        """Sends one command and returns (answer event, seconds it took)."""
        t0 = time.monotonic()
        ack = self.cmd(line)
        assert "accepted" in ack, ack
        answer = self.event(timeout)
        return answer, time.monotonic() - t0

    def stop(self):
        return self.proc.stop()

    def quit(self):
        """Closes the client: every callback ran, every libuv handle closed
        (the tool exits 0 only when uv_loop_close() succeeds)."""
        self.proc.proc.stdin.write(b"quit\n")
        self.proc.proc.stdin.flush()
        deadline = time.monotonic() + 10
        while True:
            event = self.event(max(0.1, deadline - time.monotonic()))
            if event.get("closed"):
                break
        rc = self.proc.proc.wait(timeout=10)
        assert rc == 0, "epochgate-kclient exited %s (handles left open?)" % rc


def broker_versions(address):
    """{api_key: (min, max)} from the broker's own ApiVersions v0 answer."""
    conn = kw.Connection(address[0], address[1], timeout=5)
    try:
        conn.send(kw.api_versions_request(7, 0))
        _, error, apis = kw.parse_api_versions_response(conn.recv_frame(timeout=5), 0)
        assert error == 0
        return apis
    finally:
        conn.close()


def test_typed_metadata_round_trip_matches_the_cluster(h):
    cluster = h.start_cluster(brokers=3, topics=[TOPIC + ":3:3"])
    client = KClient(h, cluster.bootstrap)
    answer, _ = client.call("metadata m1 " + TOPIC)
    assert answer["error"] == "none", answer
    expected = min(broker_versions(cluster.addresses[0])[API_METADATA][1], CODEC_MAX[API_METADATA])
    assert answer["version"] == expected, (answer["version"], expected)
    assert sorted(answer["brokers"]) == [1, 2, 3], answer
    truth = cluster.metadata([TOPIC])["topics"][TOPIC]["partitions"]
    got = answer["topics"][TOPIC]["partitions"]
    for p in range(3):
        assert got[str(p)]["leader"] == truth[p]["leader"], (got, truth)
        assert got[str(p)]["leader_epoch"] == truth[p]["leader_epoch"], (got, truth)
    # Correlation ids are the client's own and new for every request.
    again, _ = client.call("metadata m2 " + TOPIC)
    assert again["error"] == "none" and again["correlation_id"] != answer["correlation_id"]


def test_version_follows_broker_and_caller_caps(h):
    cluster = h.start_cluster(brokers=1, topics=[TOPIC + ":1:1"])
    cluster.cmd("apiversion %d 0 4" % API_METADATA)
    assert broker_versions(cluster.addresses[0])[API_METADATA] == (0, 4)
    answer, _ = KClient(h, cluster.bootstrap).call("metadata m " + TOPIC)
    assert answer["error"] == "none" and answer["version"] == 4, answer
    capped, _ = KClient(h, cluster.bootstrap, "--max-version", 2).call("metadata m " + TOPIC)
    assert capped["error"] == "none" and capped["version"] == 2, capped
    # Nothing in common: an error, and no request the broker could not read.
    none, _ = KClient(h, cluster.bootstrap, "--min-version", 5).call("metadata m " + TOPIC)
    assert none["error"] == "unsupported_version" and none["version"] == -1, none


def test_scripted_broker_versions_and_unoffered_api(h):
    """The faults rig offers Metadata v0-1 only and no Produce."""
    broker = ScriptedBroker([1])
    h.on_close(broker.close)
    client = KClient(h, broker.bootstrap)
    answer, _ = client.call("metadata m -")
    assert answer["error"] == "none" and answer["version"] == 1, answer
    assert answer["brokers"] == [1] and broker.metadata_answers == 1, answer
    # The broker's versions are known once connected: refused at once.
    produce = client.cmd("produce p %s 0 v -1" % TOPIC)
    assert produce == {"refused": "p", "error": "unsupported_version"}, produce
    # Before the connection, the same request fails in its callback.
    fresh = KClient(h, broker.bootstrap)
    produce, _ = fresh.call("produce p %s 0 v -1" % TOPIC)
    assert produce["error"] == "unsupported_version" and produce["version"] == -1, produce


def test_produce_through_the_node_pool_is_stored_and_errors_surface(h):
    cluster = h.start_cluster(brokers=3, topics=[TOPIC + ":1:3"])
    client = KClient(h, cluster.bootstrap)
    meta, _ = client.call("metadata m " + TOPIC)
    leader = meta["topics"][TOPIC]["partitions"]["0"]["leader"]
    follower = next(b for b in (1, 2, 3) if b != leader)
    ok, _ = client.call("@%d produce p1 %s 0 hello-kclient -1" % (leader, TOPIC))
    assert ok["error"] == "none", ok
    expected = min(broker_versions(cluster.broker_address(leader))[API_PRODUCE][1],
                   CODEC_MAX[API_PRODUCE])
    assert ok["version"] == expected, (ok, expected)
    assert ok["partitions"][0]["error_code"] == 0, ok
    offset = ok["partitions"][0]["base_offset"]
    read = h.kcat(["-C", "-b", cluster.bootstrap, "-t", TOPIC, "-p", "0", "-o", str(offset),
                   "-c", "1", "-e", "-X", "check.crcs=true", "-f", "%o %s\n"])
    assert read.stdout.strip() == "%d hello-kclient" % offset, read.stdout
    wrong, _ = client.call("@%d produce p2 %s 0 misrouted -1" % (follower, TOPIC))
    assert wrong["error"] == "none", wrong
    assert wrong["partitions"][0]["error_code"] == NOT_LEADER_OR_FOLLOWER, wrong
    cluster.cmd("push-errors %d %d" % (API_PRODUCE, NOT_ENOUGH_REPLICAS))
    injected, _ = client.call("@%d produce p3 %s 0 refused -1" % (leader, TOPIC))
    assert injected["partitions"][0]["error_code"] == NOT_ENOUGH_REPLICAS, injected
    # acks=0: no answer is expected, the record is still stored.
    ack = client.cmd("@%d produce p4 %s 0 fire-and-forget 0" % (leader, TOPIC))
    assert "accepted" in ack, ack

    def stored():
        r = h.kcat(["-C", "-b", cluster.bootstrap, "-t", TOPIC, "-p", "0", "-o", "beginning",
                    "-e", "-f", "%s\n"], check=False)
        return "fire-and-forget" in r.stdout
    harness.wait_until(stored, 15, interval=0.5, what="the acks=0 record stored")


def test_slow_broker_times_out_and_the_client_recovers(h):
    cluster = h.start_cluster(brokers=1, topics=[TOPIC + ":1:1"])
    client = KClient(h, cluster.bootstrap, "--timeout-ms", 300, "--connect-timeout-ms", 10000)
    warm, _ = client.call("metadata m0 " + TOPIC)
    assert warm["error"] == "none", warm
    cluster.cmd("rtt 1 3000")
    slow, took = client.call("metadata m1 " + TOPIC)
    assert slow["error"] == "timeout", slow
    assert 0.25 <= took < 2.5, took  # the broker's answer would take 3 s
    cluster.cmd("rtt 1 0")
    again, _ = client.call("metadata m2 " + TOPIC)
    assert again["error"] == "none", again


def test_broker_down_mid_request_is_a_disconnect(h):
    cluster = h.start_cluster(brokers=1, topics=[TOPIC + ":1:1"])
    client = KClient(h, cluster.bootstrap, "--timeout-ms", 20000)
    warm, _ = client.call("metadata m0 " + TOPIC)
    assert warm["error"] == "none", warm
    cluster.cmd("rtt 1 5000")
    t0 = time.monotonic()
    assert "accepted" in client.cmd("metadata m1 " + TOPIC)
    time.sleep(0.3)
    cluster.cmd("down 1")
    answer = client.event(10)
    took = time.monotonic() - t0
    assert answer["id"] == "m1" and answer["error"] == "disconnected", answer
    assert took < 4.5, took  # before the broker's delayed answer, far before the timeout


def test_blackholed_broker_fails_within_connect_timeout(h):
    blackhole = NeverAcceptingBroker(backlog=0)
    h.on_close(blackhole.sock.close)
    blackhole.fill(1)  # backlog full: every SYN from now on is dropped
    client = KClient(h, blackhole.address, "--connect-timeout-ms", 800)
    answer, took = client.call("metadata m " + TOPIC)
    assert answer["error"] == "connect_failed", answer
    assert 0.7 <= took < 3.0, took
    # Targets in order: the blackholed one costs one timeout, the next answers.
    cluster = h.start_cluster(brokers=1, topics=[TOPIC + ":1:1"])
    both = KClient(h, blackhole.address + "," + cluster.bootstrap, "--connect-timeout-ms", 800)
    answer, took = both.call("metadata m " + TOPIC)
    assert answer["error"] == "none" and 0.7 <= took, (answer, took)


def test_outstanding_requests_are_bounded(h):
    cluster = h.start_cluster(brokers=1, topics=[TOPIC + ":1:1"])
    cluster.cmd("rtt 1 500")
    client = KClient(h, cluster.bootstrap, "--max-outstanding", 2)
    assert "accepted" in client.cmd("metadata a " + TOPIC)
    assert "accepted" in client.cmd("metadata b " + TOPIC)
    refused = client.cmd("metadata c " + TOPIC)
    assert refused.get("refused") == "c" and refused["error"] == "busy", refused
    answers = [client.event(10), client.event(10)]
    # Answered in request order, both typed.
    assert [a["id"] for a in answers] == ["a", "b"], answers
    assert all(a["error"] == "none" for a in answers), answers
    assert answers[0]["correlation_id"] < answers[1]["correlation_id"], answers


if __name__ == "__main__":
    harness.main(globals(), needs_epochgate=False)
