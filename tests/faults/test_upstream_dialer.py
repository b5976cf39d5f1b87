"""An upstream connection counts as connected only once the broker answered
on it (proxy/client/upstream_dialer.h), for sessions and the refresher alike.

The broker that never answers is a plain listening socket that never calls
accept(): the kernel completes the TCP handshake for the first connections
(its backlog) and then drops SYNs, which is what a hung or overloaded broker
with a tiny backlog looks like.

- A client of epochgate whose upstream is established but never answered is
  closed within limits.upstream_connect_timeout_ms, without a byte, with
  epochgate_upstream_unanswered_total and a log line; the broker's socket
  holds epochgate's own ApiVersions only, never the client's request.
- kafka-go (Debian 0.2.1, no read deadline after its dial) gets an error
  through epochgate, as it does directly (where its dial times out), instead
  of hanging.
- The refresher gives a blackholed bootstrap broker one timeout and loads the
  view from the next one.
- A request its broker leaves unanswered limits.upstream_overdue_ms past the
  wait the request grants (Produce timeout_ms) is counted and logged once;
  the connection stays open and the late answer still arrives.
Must never bind anything but 127.0.0.1 or wait without a deadline."""

import json
import os
import select
import socket
import struct
import subprocess
import time

from faults_common import (api_versions_ok, bootstrap_address, connect, harness,  # noqa: E402
                           kw, metric_of, node_addresses, start_gate, wait_metric)
from epochgate_testlib import clients_lib  # noqa: E402  (tests/integration, on the path through faults_common)

TOPIC = "dialer"
TIMEOUT_MS = 1500
PROBE_CORRELATION_ID = 0x45470001  # epochgate's own (proxy/client/upstream_dialer.h)
NO_REFRESHER = "refresher:\n  enabled: false\n"


class NeverAcceptingBroker:
    """A loopback listener that never accepts. `backlog` connections complete
    their handshake in the kernel; later SYNs are dropped (blackholed)."""

    def __init__(self, backlog):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(backlog)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]
        self.fillers = []

    def fill(self, n):
        """Occupies `n` backlog slots with connections of our own."""
        for _ in range(n):
            c = socket.socket()
            c.settimeout(5)
            c.connect(self.sock.getsockname())
            self.fillers.append(c)

    def received(self, timeout=2.0):
        """Accepts whatever waits in the backlog now and returns the bytes
        each connection sent (the peers have closed or sent by now)."""
        out = []
        self.sock.setblocking(False)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.sock], [], [], 0.2)
            if not r:
                break
            c, _ = self.sock.accept()
            c.settimeout(1.0)
            data = b""
            try:
                while len(data) < 1 << 20:
                    chunk = c.recv(1 << 16)
                    if not chunk:
                        break
                    data += chunk
            except (socket.timeout, ConnectionResetError):
                pass
            c.close()
            out.append(data)
        return out

    def close(self):
        for c in self.fillers:
            c.close()
        self.sock.close()


def _wait_closed(conn, timeout):
    """(seconds until the peer closed, bytes received); raises if still open."""
    start = time.monotonic()
    data = b""
    while True:
        left = timeout - (time.monotonic() - start)
        if left <= 0:
            raise AssertionError("client still open %.1fs after its request (a hang): "
                                 "got %d bytes" % (timeout, len(data)))
        conn.sock.settimeout(left)
        try:
            chunk = conn.sock.recv(1 << 16)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return time.monotonic() - start, data
        if not chunk:
            return time.monotonic() - start, data
        data += chunk


def _log_has(gate, text, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(gate.proc.log_path, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.1)
    return False


def test_unanswered_upstream_closes_client_within_connect_timeout(h):
    broker = NeverAcceptingBroker(backlog=8)
    h.on_close(broker.close)
    gate = start_gate(h, broker.address, limits={"upstream_connect_timeout_ms": TIMEOUT_MS},
                      extra_yaml=NO_REFRESHER)
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    conn.send(kw.metadata_request(4242, [TOPIC], version=1))
    seconds, data = _wait_closed(conn, 15)
    assert data == b"", "a client of a broker that never answered got bytes: %r" % data[:64]
    # Closed by epochgate's deadline, not before it and not long after.
    assert TIMEOUT_MS / 1000.0 * 0.8 <= seconds <= TIMEOUT_MS / 1000.0 + 4, seconds
    wait_metric(gate, "epochgate_upstream_unanswered_total", 1, node="bootstrap")
    wait_metric(gate, "epochgate_upstream_connect_failures_total", 1, node="bootstrap")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="upstream_unreachable")
    assert _log_has(gate, "no answer to epochgate's ApiVersions"), gate.proc.tail()
    # The broker's view: epochgate sent its own ApiVersions and nothing of the
    # client's (its Metadata, correlation id 4242) to a broker that never answered.
    sent = broker.received()
    assert sent, "epochgate never connected to the broker"
    for data in sent:
        frames, rest = kw.split_frames(data)
        assert rest == b"", rest
        ids = [(struct.unpack_from(">h", f, 4)[0], kw.frame_correlation_id(f, is_request=True))
               for f in frames]
        assert ids == [(kw.API_API_VERSIONS, PROBE_CORRELATION_ID)], ids
    assert gate.proc.alive()
    h.note("unanswered upstream: client closed after %.2fs (upstream_connect_timeout_ms %d), "
           "0 bytes; broker received %d connection(s), each only epochgate's ApiVersions"
           % (seconds, TIMEOUT_MS, len(sent)))


def _kafka_go_peer(h):
    # Built by tests/integration/clients/build.sh (tools/setup.sh, and the
    # client_peers fixture before this test): here only found in its cache.
    if not os.path.isdir("/usr/share/gocode/src/github.com/segmentio/kafka-go"):
        raise harness.Skip("Debian's golang-go and golang-github-segmentio-kafka-go-dev needed")
    return clients_lib.peers()["kafkagodial"]


def _kafka_go(h, peer, address, limit=20.0):
    """The peer's JSON result, or {"hang": seconds} when it was killed at `limit`."""
    start = time.monotonic()
    try:
        p = subprocess.run([peer, "--broker", address, "--topic", TOPIC, "--dial-timeout", "3s"],
                           capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        return {"hang": time.monotonic() - start}
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["total_ms"] = int((time.monotonic() - start) * 1000)
    return r


def test_kafka_go_gets_an_error_through_epochgate_as_directly(h):
    peer = _kafka_go_peer(h)
    broker = NeverAcceptingBroker(backlog=0)  # one handshake completes, then SYNs are dropped
    h.on_close(broker.close)
    gate = start_gate(h, broker.address, limits={"upstream_connect_timeout_ms": TIMEOUT_MS},
                      extra_yaml=NO_REFRESHER)
    via = _kafka_go(h, peer, gate.bootstrap)
    # epochgate's upstream took the one backlog slot: directly, the dial now
    # times out, as it did for kafka-go against the full broker.
    direct = _kafka_go(h, peer, broker.address)
    assert "hang" not in direct, "control: kafka-go hung directly %s" % direct
    assert direct["dial_error"], "control: kafka-go connected to the full broker: %s" % direct
    assert "hang" not in via, "kafka-go hung through epochgate (killed after %.0fs)" % via["hang"]
    assert via["dial_error"] or via["read_error"], "kafka-go got an answer: %s" % via
    assert via["total_ms"] <= TIMEOUT_MS + 5000, via
    wait_metric(gate, "epochgate_upstream_unanswered_total", 1, node="bootstrap")
    h.note("kafka-go vs a never-accepting broker: through epochgate error after %d ms "
           "(dial %s, read %r); directly dial error after %d ms (%r)"
           % (via["total_ms"], "ok" if not via["dial_error"] else via["dial_error"],
              via["read_error"], direct["total_ms"], direct["dial_error"]))


def test_refresher_gives_blackholed_bootstrap_broker_one_timeout(h):
    cluster = h.start_cluster(1, ["%s:2:1" % TOPIC])
    blackhole = NeverAcceptingBroker(backlog=0)
    h.on_close(blackhole.close)
    blackhole.fill(1)  # backlog full: every SYN from now on is dropped
    start = time.monotonic()
    gate = start_gate(h, blackhole.address + "," + cluster.bootstrap,
                      limits={"upstream_connect_timeout_ms": 1000})
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 8, interval=0.1,
                       what="/readyz 200 once the refresher moved past the blackholed broker")
    loaded_s = time.monotonic() - start
    # The view came from the mock broker (its node, at its upstream port).
    status, body = gate.http_get("/debug/metadata")
    nodes = json.loads(body)["nodes"] if status == 200 else []
    port = harness.parse_hostport(cluster.bootstrap)[1]
    assert [n["upstream_port"] for n in nodes] == [port], (status, body[:300])
    assert _log_has(gate, "broker %s: connect failed after" % blackhole.address), \
        gate.proc.tail()
    h.note("refresher with a blackholed first bootstrap broker: view loaded and /readyz 200 "
           "%.2fs after start (upstream_connect_timeout_ms 1000)" % loaded_s)


def test_request_waiting_past_its_own_deadline_is_counted_and_logged(h):
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap, limits={"upstream_overdue_ms": 500})
    boot = connect(bootstrap_address(gate))
    h.on_close(boot.close)
    node1 = node_addresses(boot)[1]
    conn = connect(node1)
    h.on_close(conn.close)
    assert api_versions_ok(conn, corr=1)  # the upstream is dialed and answered
    cluster.cmd("rtt 1 3000")
    # timeout_ms 200: the broker may take 200 ms by the request's own terms;
    # at 200 + 500 ms unanswered it is overdue. The response still arrives.
    start = time.monotonic()
    conn.send(kw.produce_request(2, TOPIC, 0, kw.record_batch([b"slow"]), acks=1,
                                 timeout_ms=200))
    wait_metric(gate, "epochgate_upstream_overdue_requests_total", 1, timeout=2.8, api="produce")
    flagged_s = time.monotonic() - start
    corr, parts = kw.parse_produce_response(conn.recv_frame(timeout=15))
    answered_s = time.monotonic() - start
    assert corr == 2 and parts[(TOPIC, 0)][0] == 0, (corr, parts)
    assert flagged_s < answered_s, (flagged_s, answered_s)
    assert _log_has(gate, "(correlation id 2)"), gate.proc.tail()
    # Control: the same wait within what the request grants is not overdue.
    conn.send(kw.produce_request(3, TOPIC, 0, kw.record_batch([b"patient"]), acks=1,
                                 timeout_ms=10000))
    corr, parts = kw.parse_produce_response(conn.recv_frame(timeout=15))
    assert corr == 3 and parts[(TOPIC, 0)][0] == 0, (corr, parts)
    assert metric_of(gate, "epochgate_upstream_overdue_requests_total", api="produce") == 1
    h.note("Produce timeout_ms 200 with the broker at rtt 3000: overdue counted after %.2fs, "
           "answered after %.2fs; timeout_ms 10000 not counted" % (flagged_s, answered_s))


if __name__ == "__main__":
    harness.main(globals())
