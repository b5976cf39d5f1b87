"""Upstream connections each worker keeps dialled and answered ahead
(limits.warm_upstreams_per_broker, proxy/client/warm_upstreams.h), over real
sockets in front of the mock cluster:

- a client on a broker's listener whose session took a kept connection gets
  exactly the answers a session that dialled its own gets: the same bytes, in
  its request order, with its own correlation ids (one epochgate with the
  pool, one without, the same cluster);
- a broker that is down is not dialled in a storm: the pool backs off
  (1 s doubling to 30 s), so its failed connects stay a handful while the
  broker stays down, and epochgate keeps serving the other broker.
Loopback only; every wait has a deadline."""

import time

from faults_common import (bootstrap_address, connect, harness, kw, metric_of,  # noqa: E402,F401
                           node_addresses, start_gate)

CORRELATION_IDS = (0x101, 0x102, 0x103)


def _exchange(address):
    """Pipelines three ApiVersions requests (v0, v1, v2) on a new connection
    to `address`; returns the three answer frames as read."""
    conn = connect(address)
    try:
        conn.send(b"".join(kw.api_versions_request(corr, v) for v, corr in enumerate(CORRELATION_IDS)))
        return [conn.recv_frame(timeout=10) for _ in CORRELATION_IDS]
    finally:
        conn.close()


def _node_addresses(gate):
    conn = connect(bootstrap_address(gate))
    try:
        return node_addresses(conn)
    finally:
        conn.close()


def test_session_on_kept_connection_answers_as_a_dialled_one(h):
    cluster = h.start_cluster(2)
    warm = start_gate(h, cluster.bootstrap, limits={"warm_upstreams_per_broker": 1})
    cold = start_gate(h, cluster.bootstrap, limits={"warm_upstreams_per_broker": 0})
    cold_frames = _exchange(_node_addresses(cold)[1])
    assert [kw.frame_correlation_id(f, is_request=False) for f in cold_frames] == list(CORRELATION_IDS), cold_frames
    node1 = _node_addresses(warm)[1]
    # The pool fills after epochgate's first metadata refresh: try until a
    # session took a kept connection (bounded), checking every answer.
    deadline = time.monotonic() + 15
    hits = 0
    exchanges = 0
    while time.monotonic() < deadline:
        frames = _exchange(node1)
        exchanges += 1
        assert frames == cold_frames, "answers differ from a dialled session's: %r vs %r" % (
            frames, cold_frames)
        hits = metric_of(warm, "epochgate_upstream_warm_total", outcome="hit")
        if hits >= 1:
            break
        time.sleep(0.2)
    assert hits >= 1, "no session took a kept connection in %d tries" % exchanges
    assert metric_of(cold, "epochgate_upstream_warm_total", outcome="hit") == 0
    assert metric_of(cold, "epochgate_upstream_warm_total", outcome="miss") == 0, \
        "counted with the pool off"
    h.note("kept connection taken after %d exchange(s); answers identical to the dialled session's"
           % exchanges)


def test_down_broker_is_not_dialled_in_a_storm(h):
    cluster = h.start_cluster(2)
    gate = start_gate(h, cluster.bootstrap, limits={"warm_upstreams_per_broker": 1})
    nodes = _node_addresses(gate)
    cluster.cmd("down 2")
    before = metric_of(gate, "epochgate_upstream_connect_failures_total", node="2")
    window_s = 4.0
    time.sleep(window_s)
    failed = metric_of(gate, "epochgate_upstream_connect_failures_total", node="2") - before
    # Per worker (2 by default): a dial at most 1, 2 then 4 s after the
    # previous failure, plus the one under way when the broker went down.
    assert failed <= 2 * 4, "%d failed connects to a down broker in %.0f s: a dial storm" % (
        failed, window_s)
    assert gate.proc.alive()
    frames = _exchange(nodes[1])
    assert [kw.frame_correlation_id(f, is_request=False) for f in frames] == list(CORRELATION_IDS)
    cluster.cmd("up 2")
    h.note("down broker: %d failed connects from the pool in %.0f s" % (failed, window_s))


if __name__ == "__main__":
    harness.main(globals())
