"""Upstream faults on the embedded mock cluster, with a
fault-injecting relay (fault_relay.py) where the mock cannot misbehave:

- broker down at connect: the client gets a closed connection, counted in
  epochgate_upstream_connect_failures_total and
  epochgate_connections_closed_total{reason="upstream_unreachable"};
- a node's broker down (mock `down`), then up: closed connections exactly as
  a direct client sees them, and recovery;
- broker closing in the middle of a response: the client gets every whole
  response before it and never a partial frame, then a closed connection;
- broker answering garbage (size prefix too large, negative, or a body that
  does not decode): only that client connection closes, with the reason in
  epochgate_frame_errors_total; other clients keep being served;
- broker slowed (`rtt`): pipelined requests are all answered, in order, and a
  librdkafka producer/consumer loses nothing;
- every broker down: what readiness and clients see, and recovery.

Each test also checks no client connection is left counted open."""

import time

from faults_common import (api_versions_ok, bootstrap_address, closed_by_peer, connect,  # noqa: E402
                           dead_port, harness, kw, metric_of, node_addresses, samples,
                           start_gate, wait_metric)
from epochgate_testlib.fault_relay import FaultRelay, mark  # noqa: E402

TOPIC = "faults"


def _client_connections_settle(gate, expected, timeout=10.0):
    """epochgate_connections_active{side="client"} comes back to `expected`."""
    harness.wait_until(
        lambda: metric_of(gate, "epochgate_connections_active", side="client") == expected,
        timeout, what="epochgate_connections_active{side=client} == %d" % expected)


def _read_until_close(conn, timeout):
    """Bytes received until the peer closes (raises if it stays open)."""
    data = conn.pending
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("connection still open after %.0fs" % timeout)
        conn.sock.settimeout(left)
        try:
            chunk = conn.sock.recv(1 << 16)
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def test_broker_down_at_connect_closes_client(h):
    port = dead_port()
    gate = start_gate(h, "127.0.0.1:%d" % port, limits={"upstream_connect_timeout_ms": 2000})
    before = metric_of(gate, "epochgate_upstream_connect_failures_total")
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    conn.send(kw.api_versions_request(1, 0))
    data = _read_until_close(conn, 15)
    assert data == b"", "a client of an unreachable broker got bytes: %r" % data[:64]
    wait_metric(gate, "epochgate_upstream_connect_failures_total", before + 1, node="bootstrap")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="upstream_unreachable")
    status, body = gate.http_get("/readyz")
    assert status == 503, (status, body)
    _client_connections_settle(gate, 0)
    # Control: straight at the dead port the client is refused; through
    # epochgate it is accepted and then closed without a byte. Both are a
    # transport error to a Kafka client, which retries either way.
    try:
        connect(("127.0.0.1", port), timeout=2).close()
        raise AssertionError("control: something listens on the dead port")
    except ConnectionRefusedError:
        pass
    h.note("unreachable broker: client closed without a byte, readyz %d (%s)" % (
        status, body.strip()))


def test_node_broker_down_then_up_matches_direct(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = start_gate(h, cluster.bootstrap)
    boot = connect(bootstrap_address(gate))
    h.on_close(boot.close)
    nodes = node_addresses(boot)
    assert sorted(nodes) == [1, 2, 3], nodes

    failures_before = metric_of(gate, "epochgate_upstream_connect_failures_total", node="2")
    cluster.cmd("down 2")
    via_gate = connect(nodes[2])
    h.on_close(via_gate.close)
    via_gate.send(kw.api_versions_request(2, 0))
    gate_bytes = _read_until_close(via_gate, 15)
    # Control: a direct client of the downed mock broker is refused (the mock
    # closes its listener) or closed; either way it never gets a response.
    try:
        direct = connect(cluster.broker_address(2))
        h.on_close(direct.close)
        direct.send(kw.api_versions_request(2, 0))
        direct_outcome = "closed, %d bytes" % len(_read_until_close(direct, 15))
    except ConnectionRefusedError:
        direct_outcome = "refused"
    assert gate_bytes == b"", gate_bytes[:32]
    assert direct_outcome in ("refused", "closed, 0 bytes"), direct_outcome
    wait_metric(gate, "epochgate_upstream_connect_failures_total", failures_before + 1, node="2")
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="upstream_unreachable")
    # The bootstrap connection (broker 1) is unaffected.
    assert api_versions_ok(boot, corr=3)

    cluster.cmd("up 2")
    def node2_works():
        try:
            c = connect(nodes[2], timeout=5)
            try:
                return api_versions_ok(c, corr=4, timeout=5)
            finally:
                c.close()
        except (OSError, kw.WireError, AssertionError):
            return False
    harness.wait_until(node2_works, 20, interval=0.5, what="node 2 served again after `up 2`")
    _client_connections_settle(gate, 1)  # only `boot` is left


def test_broker_closing_mid_response(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    relay = FaultRelay(cluster.broker_address(1), fault="cut")
    h.on_close(relay.close)
    gate = start_gate(h, relay.address)
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    assert api_versions_ok(conn, corr=1)
    # Three pipelined requests; the broker dies half-way through the second answer.
    conn.send(kw.metadata_request(10, [TOPIC], version=1) +
              kw.metadata_request(mark(11), [TOPIC], version=1) +
              kw.api_versions_request(12, 0))
    data = _read_until_close(conn, 15)
    frames, rest = kw.split_frames(data)
    ids = [kw.frame_correlation_id(f, is_request=False) for f in frames]
    assert ids == [10], "expected exactly the first whole response, got ids %s" % ids
    assert rest == b"", "a partial frame reached the client (%d bytes)" % len(rest)
    assert relay.faults_applied == 1
    wait_metric(gate, "epochgate_connections_closed_total", 1, reason="upstream_closed")
    # epochgate keeps serving: a new client gets a new upstream connection.
    other = connect(bootstrap_address(gate))
    h.on_close(other.close)
    assert api_versions_ok(other, corr=13)
    other.send(kw.metadata_request(14, [TOPIC], version=1))
    md = kw.parse_metadata_response(other.recv_frame(), 1)
    assert TOPIC in md["topics"], md
    _client_connections_settle(gate, 1)


def _garbage_case(h, fault, reason):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    relay = FaultRelay(cluster.broker_address(1), fault=fault)
    h.on_close(relay.close)
    gate = start_gate(h, relay.address)
    bystander = connect(bootstrap_address(gate))
    h.on_close(bystander.close)
    assert api_versions_ok(bystander, corr=1)
    victim = connect(bootstrap_address(gate))
    h.on_close(victim.close)
    assert api_versions_ok(victim, corr=2)
    errors_before = metric_of(gate, "epochgate_frame_errors_total")
    victim.send(kw.metadata_request(mark(3), [TOPIC], version=1))
    data = _read_until_close(victim, 15)
    assert data == b"", "bytes of a broken response reached the client: %r" % data[:64]
    assert relay.faults_applied == 1
    if reason:
        wait_metric(gate, "epochgate_frame_errors_total", 1, reason=reason)
        wait_metric(gate, "epochgate_connections_closed_total", 1, reason=reason)
    else:
        wait_metric(gate, "epochgate_frame_errors_total", errors_before + 1)
    # The other client is still served, twice (its upstream is a different connection).
    assert api_versions_ok(bystander, corr=4)
    bystander.send(kw.metadata_request(5, [TOPIC], version=1))
    assert TOPIC in kw.parse_metadata_response(bystander.recv_frame(), 1)["topics"]
    _client_connections_settle(gate, 1)
    assert gate.proc.alive()
    return gate


def test_broker_garbage_size_too_large(h):
    _garbage_case(h, "huge_size", "frame_too_large")


def test_broker_garbage_negative_size(h):
    _garbage_case(h, "negative_size", "negative_frame_size")


def test_broker_garbage_metadata_body(h):
    gate = _garbage_case(h, "garbage_body", None)
    reasons = sorted(l.get("reason") for n, l, v in samples(gate.metrics())
                     if n == "epochgate_frame_errors_total" and v > 0)
    h.note("garbage Metadata body: frame_errors_total reasons %s" % reasons)


def test_broker_slowed_answers_in_order_nothing_lost(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = start_gate(h, cluster.bootstrap)
    conn = connect(bootstrap_address(gate), timeout=30)
    h.on_close(conn.close)
    assert api_versions_ok(conn, corr=1)
    cluster.cmd("rtt 1 500")
    cluster.cmd("rtt 2 500")
    cluster.cmd("rtt 3 500")
    ids = list(range(100, 120))
    batch = b"".join(kw.metadata_request(i, [TOPIC], version=1) if i % 2 else
                     kw.api_versions_request(i, 0) for i in ids)
    started = time.monotonic()
    conn.send(batch)
    got = [kw.frame_correlation_id(conn.recv_frame(timeout=30), is_request=False) for _ in ids]
    took = time.monotonic() - started
    assert got == ids, got
    assert took >= 0.45, "rtt 500 ms had no effect (%.3fs)" % took
    # A real producer and consumer group through the slowed cluster.
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", TOPIC, "--messages", "300",
                         "--partitions-keyed", "--idempotent", "--acks", "all",
                         "--consume-group", "slow-group", "--deadline-s", "90"], timeout=180)
    assert s["acked"] == 300 and s["missing"] == 0 and s["duplicates"] == 0, s
    h.note("rtt 500 ms: 20 pipelined answered in order in %.2fs; 300 acked, 0 lost, %.1fs" % (
        took, s["seconds"]))


test_broker_slowed_answers_in_order_nothing_lost.timeout = 200


def test_every_broker_down_then_recovery(h):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    gate = start_gate(h, cluster.bootstrap, extra_yaml="refresher:\n  interval_ms: 1000\n",
                      limits={"upstream_connect_timeout_ms": 2000})
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 15, what="/readyz 200")
    for b in (1, 2, 3):
        cluster.cmd("down %d" % b)
    conn = connect(bootstrap_address(gate))
    h.on_close(conn.close)
    conn.send(kw.api_versions_request(1, 0))
    assert _read_until_close(conn, 20) == b"", "a client got bytes with every broker down"
    # Readiness follows the cluster: with nothing reachable for several
    # refresher periods (1 s here), /readyz must say so.
    deadline = time.monotonic() + 10
    ready_down = gate.http_get("/readyz")
    while ready_down[0] == 200 and time.monotonic() < deadline:
        time.sleep(0.5)
        ready_down = gate.http_get("/readyz")
    refreshes = metric_of(gate, "epochgate_metadata_refreshes_total")
    _client_connections_settle(gate, 0)

    for b in (1, 2, 3):
        cluster.cmd("up %d" % b)
    def served():
        try:
            c = connect(bootstrap_address(gate), timeout=5)
            try:
                return api_versions_ok(c, corr=2, timeout=5)
            finally:
                c.close()
        except (OSError, kw.WireError, AssertionError):
            return False
    harness.wait_until(served, 30, interval=0.5, what="service after every broker is back")
    harness.wait_until(lambda: gate.http_get("/readyz")[0] == 200, 30, what="/readyz 200 again")
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", TOPIC, "--messages", "200",
                         "--idempotent", "--acks", "all", "--consume-group", "back-group"],
                        timeout=120)
    assert s["acked"] == 200 and s["missing"] == 0, s
    # Checked last so a failure here still shows whether recovery worked.
    assert ready_down[0] == 503, ("/readyz still answers %d %r 10 s after every broker went "
                                  "down (%d refreshes sent); recovery worked" % (
                                      ready_down[0], ready_down[1].strip(), refreshes))
    h.note("every broker down: client closed without a byte; /readyz answered %d %r while "
           "down (metadata refreshes sent so far: %d); recovered" % (
               ready_down[0], ready_down[1].strip(), refreshes))


test_every_broker_down_then_recovery.timeout = 200


if __name__ == "__main__":
    harness.main(globals())
