"""A client's FIN right behind its requests (shutdown(SHUT_WR)) is a
half-close, as Kafka's brokers take it: the requests before it are
answered, in order, then the connection closes. Against the mock cluster,
in the cases the session rig cannot show on real sockets:

- the FIN arrives while epochgate has paused reading the client (one
  request in flight at most, a slow broker): it is not read, only seen in
  the socket's state, and is still answered as a half-close;
- acks=0 Produce requests, which get no answer, then the FIN: every record
  reaches the broker (ListOffsets straight at it), as when the same bytes
  go to the broker directly;
- a reset after the FIN: nothing written can reach the client, so the
  session and its upstream connection go at once, not at the drain bound.

The real broker's side of the same behaviour (Kafka 4.4.0 answering before
its close) is pinned in tests/realkafka/test_wire_hints.py.
"""

import socket
import struct
import time

from faults_common import harness, kw, metric_of, start_gate  # noqa: E402

TOPIC = "halfclose"


def _rig(h, limits=None):
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    gate = start_gate(h, cluster.bootstrap, limits=limits)
    return cluster, gate


def _open(gate):
    """A plain socket to epochgate's bootstrap listener with its session
    open (one Metadata answered)."""
    conn = kw.Connection(*harness.parse_hostport(gate.bootstrap))
    conn.send(kw.metadata_request(1, [TOPIC], version=1))
    conn.recv_frame()
    return conn.sock


def _read_to_eof(s, timeout):
    """The correlation ids of the frames read until the peer's FIN, and how
    the stream ended: "eof", "reset" or "timeout"."""
    data, how = b"", "eof"
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            how = "timeout"
            break
        s.settimeout(left)
        try:
            chunk = s.recv(1 << 16)
        except socket.timeout:
            how = "timeout"
            break
        except ConnectionResetError:
            how = "reset"
            break
        if not chunk:
            break
        data += chunk
    frames, _ = kw.split_frames(data)
    return [struct.unpack(">i", f[4:8])[0] for f in frames], how


def _log_end_offset(cluster):
    host, _, port = cluster.bootstrap.split(",")[0].rpartition(":")
    conn = kw.Connection(host, int(port))
    try:
        conn.send(kw.list_offsets_request(5, TOPIC, [0]))
        answer = kw.parse_list_offsets_response(conn.recv_frame())
    finally:
        conn.close()
    offset, error = answer[1][(TOPIC, 0)]
    assert error == 0, error
    return offset


def test_a_fin_behind_paused_reads_is_answered(h):
    cluster, gate = _rig(h, limits={"max_in_flight_per_connection": 1})
    s = _open(gate)
    cluster.cmd("rtt 1 400")
    s.sendall(b"".join(kw.metadata_request(100 + i, [TOPIC], version=1) for i in range(4)))
    time.sleep(0.1)
    s.shutdown(socket.SHUT_WR)
    # The worker's sweep (1 s) sees the FIN while reads are paused.
    ids, how = _read_to_eof(s, 20)
    s.close()
    assert ids == [100, 101, 102, 103] and how == "eof", (ids, how)


def test_acks0_produce_then_fin_reaches_the_broker(h):
    cluster, gate = _rig(h)
    for count, size in ((20, 30000), (5, 300000)):
        before = _log_end_offset(cluster)
        s = _open(gate)
        s.sendall(b"".join(kw.produce_request(10 + i, TOPIC, 0, kw.record_batch([b"v" * size]),
                                              acks=0) for i in range(count)))
        s.shutdown(socket.SHUT_WR)
        ids, how = _read_to_eof(s, 20)
        s.close()
        assert ids == [] and how == "eof", (ids, how)
        stored = _log_end_offset(cluster) - before
        h.note("%d acks=0 Produce of %d bytes, then FIN: %d records at the broker"
               % (count, size, stored))
        assert stored == count, "%d of %d records reached the broker" % (stored, count)


def test_a_reset_after_the_fin_frees_the_session(h):
    cluster, gate = _rig(h)
    s = _open(gate)
    cluster.cmd("rtt 1 15000")
    s.sendall(kw.metadata_request(100, [TOPIC], version=1))
    harness.wait_until(lambda: metric_of(gate, "epochgate_in_flight_requests") == 1, 10,
                       what="the request in flight")
    s.shutdown(socket.SHUT_WR)
    time.sleep(0.3)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    gone = time.monotonic()
    harness.wait_until(lambda: metric_of(gate, "epochgate_sessions_live") == 0, 10,
                       what="the session freed after the reset")
    h.note("session freed %.1f s after the reset (the broker answers after 15 s)"
           % (time.monotonic() - gone))
    assert metric_of(gate, "epochgate_upstream_connections_live") == 0


if __name__ == "__main__":
    harness.main(globals())
