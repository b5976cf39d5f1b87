"""Hostile peers against the Produce splice path's waits and small reads.

A streamed Produce's records are spliced to their last 4 KiB; the run's
tail is read with up to 1 KiB of the next frame; the first read after a
streamed request takes 1 KiB; while records are to be spliced (or a large
Produce waits for an idle broker connection) the client's reads stop until
the broker's queue is written (docs/splice-data-path.md). These runs try to
make that lose, reorder or corrupt bytes, or hang, against the mock
cluster with raw frames:

- an acks=0 Produce (no answer at all) spliced, its tail in one segment
  with a Metadata, a small Produce and an ApiVersions: each answered once,
  in order, every record stored once;
- pipelined on one connection: small, large, fenced large (answered by
  epochgate), large and small Produce and a Metadata, in one send: answered
  in request order with the right errors, the broker stores the leader's
  records in order and nothing of the fenced one;
- after a streamed request, the next frames so laid out that the 1 KiB
  first read ends 1, 2, 3, 4 or 5 bytes into the next frame's size prefix:
  all answered in order;
- a broker that stops reading while the client's reads wait for its queue:
  when the broker then closes, the client's connection closes (no hang);
  when the client gives up instead, epochgate closes the broker's side;
- a client that half-closes right behind a spliced request: its
  connection ends (answered or closed), never hangs, epochgate serves on;
- producers idle after a streamed request hold no buffers.
Every wait is bounded by a timeout; nothing asserts on timing.
"""

import random
import socket
import struct
import threading
import time

from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness  # noqa: E402
from test_produce_splice import _one_broker_gate, _value  # noqa: E402  (beside this file)

SPLICED = "epochgate_spliced_bytes_total"
UP = {"direction": "client_to_upstream"}


def _produce(gc, topic, partition, values, version=9, acks=1):
    return sw.produce_request(gc.next_corr(), topic, [(partition, kw.record_batch(values))],
                              acks=acks, version=version)


def _api_versions(corr, total):
    """An ApiVersions v0 request of exactly `total` bytes (size prefix
    included), padded by its client id."""
    frame = kw.request_frame(kw.API_API_VERSIONS, 0, corr, b"", client_id="x" * (total - 14))
    assert len(frame) == total, len(frame)
    return frame


def _corr(frame):
    """A response's correlation id."""
    return kw.frame_correlation_id(frame, False)


def _req(frame):
    """A request's correlation id."""
    return kw.frame_correlation_id(frame, True)


def test_acks0_spliced_then_requests_in_its_tail_segment(h):
    topic = "hostile-acks0"
    cluster, gate, gc = _one_broker_gate(h, topic)
    conn = gc.ready_conn(1)
    rnd = random.Random(60)
    stored = []
    before = sl.scrape(gate)
    for version in (8, 9):
        big = [_value(rnd, len(stored), 400000)]
        frame = _produce(gc, topic, 0, big, version=version, acks=0)
        small = [_value(rnd, len(stored) + 1, 100)]
        md = kw.metadata_request(gc.next_corr(), [topic], version=7)
        sp = _produce(gc, topic, 0, small, version=version)
        av = kw.api_versions_request(gc.next_corr())
        conn.send(frame[:-1])
        time.sleep(0.3)  # the records spliced; the last byte comes with the rest
        conn.send(frame[-1:] + md + sp + av)
        got = [conn.recv_frame(timeout=30) for _ in range(3)]
        assert [_corr(f) for f in got] == [_req(md), _req(sp), _req(av)], \
            [_corr(f) for f in got]
        assert topic in kw.parse_metadata_response(got[0], 7)["topics"]
        assert sw.parse_produce_response(got[1], version)["partitions"][0][2] == 0
        stored += big + small
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) > 0
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == stored


def test_pipelined_small_large_and_fenced_answered_in_order(h):
    topic = "hostile-pipe"
    cluster = h.start_cluster(2, ["%s:4:2" % topic])
    # Placed, not left to the mock (which put all four on one broker in
    # about one run in eight): partition 1 is led elsewhere, to be fenced.
    for p in range(4):
        cluster.cmd("leader %s %d %d" % (topic, p, 1 + p % 2))
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    leaders = {p: cluster.partition(topic, p)["leader"] for p in range(4)}
    node = leaders[0]
    fenced = [p for p, l in leaders.items() if l != node]
    assert fenced, "the leaders did not take: %s" % leaders
    stale = fenced[0]
    conn = gc.ready_conn(node)
    rnd = random.Random(61)
    for rounds in range(2):
        vs = [[_value(rnd, 10 * rounds + i, n)] for i, n in enumerate((200, 300000, 500000, 700, 1 << 20))]
        frames = [_produce(gc, topic, 0, vs[0]), _produce(gc, topic, 0, vs[1]),
                  _produce(gc, topic, stale, [_value(rnd, 99, 300000)]),
                  _produce(gc, topic, 0, vs[2]), _produce(gc, topic, 0, vs[3]),
                  _produce(gc, topic, 0, vs[4]),
                  kw.metadata_request(gc.next_corr(), [topic], version=7)]
        conn.send(b"".join(frames))
        got = [conn.recv_frame(timeout=60) for _ in frames]
        assert [_corr(f) for f in got] == [_req(f) for f in frames]
        errors = [sw.parse_produce_response(f, 9)["partitions"][0][2] for f in got[:-1]]
        assert errors == [0, 0, 6, 0, 0, 0], errors  # 6: NOT_LEADER_OR_FOLLOWER
        want = [v for i, v in enumerate(vs) for v in v]
        have = sl.read_partition(h, cluster, topic, 0)
        assert [g.encode() for g in have[-len(want):]] == want
        assert len(have) == 5 * (rounds + 1)
    assert sl.read_partition(h, cluster, topic, stale) == []


def test_size_prefix_split_across_the_first_read(h):
    topic = "hostile-split"
    cluster, gate, gc = _one_broker_gate(h, topic)
    conn = gc.ready_conn(1)
    rnd = random.Random(62)
    stored = []
    for into in (1, 2, 3, 4, 5):
        vs = [_value(rnd, len(stored), 300000)]
        frame = _produce(gc, topic, 0, vs)
        conn.send(frame)
        assert sw.parse_produce_response(conn.recv_frame(timeout=30), 9)["partitions"][0][2] == 0
        stored += vs
        # 1 KiB first read: the first frame and `into` bytes of the next's.
        a = _api_versions(gc.next_corr(), 1024 - into)
        b = _api_versions(gc.next_corr(), 2000)
        more = [_value(rnd, len(stored), 200000)]
        c = _produce(gc, topic, 0, more)
        conn.send(a + b + c)
        got = [conn.recv_frame(timeout=30) for _ in range(3)]
        assert [_corr(f) for f in got] == [_req(a), _req(b), _req(c)], into
        assert sw.parse_produce_response(got[2], 9)["partitions"][0][2] == 0
        stored += more
        # The same right behind a run's tail (read with up to 1 KiB more).
        vs = [_value(rnd, len(stored), 300000)]
        frame = _produce(gc, topic, 0, vs)
        conn.send(frame[:-into])
        time.sleep(0.2)
        a = _api_versions(gc.next_corr(), 1024 - into)
        b = _api_versions(gc.next_corr(), 600)
        conn.send(frame[-into:] + a + b)
        got = [conn.recv_frame(timeout=30) for _ in range(3)]
        assert [_corr(f) for f in got] == [_req(frame), _req(a), _req(b)]
        stored += vs
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == stored


class _StallingRelay:
    """Relays epochgate's connections to one broker; once `stall_after`
    bytes came from epochgate on a connection it stops reading them (a
    broker that never reads again) until close_all(), which resets both
    sides. Its receive buffer is small, so epochgate meets a full socket
    soon. Loopback only."""

    def __init__(self, upstream, stall_after):
        self.upstream = upstream
        self.stall_after = stall_after
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.stop = threading.Event()
        self.downs = []
        self.stalled = threading.Event()
        self.stalled_socket = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            self.downs.append((down, up))
            threading.Thread(target=self._pump, args=(down, up, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, False), daemon=True).start()

    def _pump(self, src, dst, from_gate):
        seen = 0
        try:
            while not self.stop.is_set():
                if from_gate and seen >= self.stall_after:
                    self.stalled_socket = src
                    self.stalled.set()
                    self.stop.wait(0.05)
                    continue
                want = 8192 if not from_gate else min(8192, self.stall_after - seen)
                got = src.recv(want)
                if not got:
                    break
                seen += len(got)
                dst.sendall(got)
        except OSError:
            pass

    def stalled_state(self):
        """TCP state (tcpi_state) of the stalled socket facing epochgate."""
        return struct.unpack_from("B", self.stalled_socket.getsockopt(
            socket.IPPROTO_TCP, socket.TCP_INFO, 8))[0]

    def close_all(self):
        self.stop.set()
        for pair in self.downs:
            for s in pair:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.close()
                except OSError:
                    pass

    def close(self):
        self.close_all()
        self.listener.close()


def _stalled_gate(h, topic, seed):
    """A gate whose broker stops reading after a Produce's head, and a client
    that sent it more of a 48 MiB Produce than the sockets on the way hold:
    (relay, gate, client connection, bytes sent, frame size)."""
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    # Enough for epochgate's probe, the client's ApiVersions and a Produce head.
    relay = _StallingRelay(cluster.broker_address(1), stall_after=200000)
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, upstream=relay.address)
    gc = sl.GateClient(h, gate)
    conn = gc.ready_conn(None)
    frame = _produce(gc, topic, 0, [_value(random.Random(seed), 0, 48 << 20)])
    sent = _send_some(conn, frame, 5)
    assert relay.stalled.wait(10)
    assert sent < len(frame), "every byte went in: nothing waits"
    return relay, gate, conn, sent, len(frame)


def _send_some(conn, data, timeout):
    """Sends what the socket takes of `data` within `timeout` s; returns the bytes sent."""
    conn.sock.settimeout(0.2)
    sent, deadline = 0, time.monotonic() + timeout
    while sent < len(data) and time.monotonic() < deadline:
        try:
            sent += conn.sock.send(data[sent:sent + 65536])
        except socket.timeout:
            pass
    return sent


def test_broker_stops_reading_then_closes_the_client_is_closed(h):
    topic = "hostile-stall"
    relay, gate, conn, sent, size = _stalled_gate(h, topic, 63)
    h.note("the client got %d of %d bytes in before epochgate stopped reading" % (sent, size))
    time.sleep(2.5)  # the workers publish epochgate_buffered_bytes once a second
    held = sl.scrape(gate).sum("epochgate_buffered_bytes")
    h.note("epochgate holds %d buffer bytes meanwhile" % held)
    assert held <= 8 << 20, held  # what a splice spilled (at most a pipe's worth) and a block
    relay.close_all()  # the broker resets while the client's reads wait for its queue
    try:
        conn.recv_frame(timeout=30)
        raise AssertionError("answered although the broker went away mid-request")
    except (kw.WireError, OSError):
        pass


def test_client_gives_up_while_its_reads_wait_the_broker_side_closes(h):
    topic = "hostile-giveup"
    relay, gate, conn, _, _ = _stalled_gate(h, topic, 64)
    before = sl.scrape(gate)
    # A reset: a FIN would wait behind the bytes epochgate does not read.
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    # epochgate sees the client gone (its reads stopped: the sweep's check)
    # and closes the session with its broker connection. (The relay's
    # socket may stay ESTABLISHED: epochgate's FIN waits behind the bytes
    # the relay never reads.)
    closed = "epochgate_connections_closed_total"
    deadline = time.monotonic() + 20
    while (sl.delta(sl.scrape(gate), before, closed, reason="client_closed") < 1
           and time.monotonic() < deadline):
        time.sleep(0.1)
    assert sl.delta(sl.scrape(gate), before, closed, reason="client_closed") >= 1, \
        "epochgate kept the session of a gone client"


def test_half_close_after_a_spliced_request_ends(h):
    topic = "hostile-half"
    cluster, gate, gc = _one_broker_gate(h, topic)
    rnd = random.Random(65)
    c = sl.connect(gc.brokers[1], timeout=10)
    h.on_close(c.close)
    c.send(kw.api_versions_request(gc.next_corr()))
    c.recv_frame(timeout=10)
    c.send(_produce(gc, topic, 0, [_value(rnd, 0, 500000)]))
    c.sock.shutdown(socket.SHUT_WR)
    try:
        r = sw.parse_produce_response(c.recv_frame(timeout=30), 9)
        h.note("answered after the half-close: error %d" % r["partitions"][0][2])
    except kw.WireError:
        h.note("closed after the half-close, unanswered")
    gc2 = sl.GateClient(h, gate)
    assert topic in gc2.metadata([topic])["topics"]
    assert len(sl.read_partition(h, cluster, topic, 0)) <= 1


def test_idle_sessions_after_a_streamed_request_hold_no_buffers(h):
    """Once answered, a producer's connection that streamed a request and
    then idles holds no input buffer, like any idle connection: memory
    grows with what peers send, not with how many of them wait."""
    topic = "hostile-idle"
    cluster, gate, gc = _one_broker_gate(h, topic)
    rnd = random.Random(66)
    conns = []
    before = sl.scrape(gate)
    for i in range(24):
        c = sl.connect(gc.brokers[1], timeout=10)
        h.on_close(c.close)
        c.send(_produce(gc, topic, 0, [_value(rnd, i, 300000)]))
        assert sw.parse_produce_response(c.recv_frame(timeout=30), 9)["partitions"][0][2] == 0
        conns.append(c)
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) > 0
    time.sleep(2.5)  # the workers publish epochgate_buffered_bytes once a second
    held = sl.scrape(gate).sum("epochgate_buffered_bytes")
    h.note("24 idle connections after a streamed request: %d buffer bytes held" % held)
    assert held < 64 * 1024, held


if __name__ == "__main__":
    harness.main(globals())
