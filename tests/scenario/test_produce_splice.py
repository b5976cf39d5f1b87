"""A large Produce request forwarded while it arrives, its last partition's
record bytes spliced client socket to broker socket.

With plain TCP on both sides, a Produce whose head (every field before its
last partition's records) the policy forwards as it is goes upstream while
it is read, and once at least limits.splice_min_bytes of those records are
still to come they move through a kernel pipe (docs/splice-data-path.md).
These runs pin what the broker and the client must see all the same,
against the mock cluster:

- kcat (librdkafka) produces 64 KiB and 1 MiB records through epochgate;
  read back from the broker directly with check.crcs=true, every record is
  there once with the bytes produced, and most record bytes were spliced
  (epochgate_spliced_bytes_total{direction="client_to_upstream"});
- raw Produce frames (v8 and v9) sent in uneven pieces with pauses (short
  splices, EAGAIN on the client's socket), a Metadata request right behind
  each: answered in order, the records stored byte for byte;
- a frame whose records' last byte comes alone after a pause (the run's
  tail, read with the next frame's head), then a frame sent whole with a
  Metadata request behind it: every one answered, in order;
- the bytes epochgate sends the broker are the client's, in order, also when
  a head streams behind bytes queued in its read turn (the previous
  request's last fields, a small request) and when the broker reads slowly
  (EAGAIN on the broker's socket: what a splice could not hand over is
  queued, epochgate's buffers stay bounded);
- a broker that resets its connection in the middle of the records closes
  the client's connection (no answer, no hang), and epochgate keeps serving;
- a client that closes in the middle of the records: its connection closes,
  the broker stores nothing of that request, epochgate keeps serving;
- a request to a broker that no longer leads the partition (fenced), a
  topic with a reroute rule, and limits.splice_min_bytes: 0 take the
  whole-frame path: nothing spliced, the same answers as before.
TLS on one side keeps the copying path (Transport::splice_fd() is -1).
"""

import random
import socket
import struct
import threading
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402
from epochgate_testlib.tcp_relay import TcpRelay  # noqa: E402

SPLICED = "epochgate_spliced_bytes_total"
UP = {"direction": "client_to_upstream"}


def _value(rnd, i, n):
    # Printable, so kcat's line output carries it whole.
    return ((b"%07d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(997)) * (n // 997 + 1))[:n]


def _one_broker_gate(h, topic):
    """A one-broker cluster with `topic` (one partition), epochgate in
    front, a client that knows the topic: (cluster, gate, client)."""
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    return cluster, gate, gc


def _produce(gc, node, topic, partition, values, version):
    return sw.produce_request(gc.next_corr(), topic, [(partition, kw.record_batch(values))],
                              acks=1, version=version)


def test_librdkafka_produces_64k_and_1m_records_spliced(h):
    topic = "psplice-rdk"
    cluster = h.start_cluster(1, ["%s:2:1" % topic])
    gate = sl.start_gate(h, cluster)
    rnd = random.Random(40)
    sizes = {0: (65536, 24), 1: (1 << 20, 3)}
    values = {p: [_value(rnd, i, size) for i in range(count)]
              for p, (size, count) in sizes.items()}
    before = sl.scrape(gate)
    for p, vs in values.items():
        h.kcat(["-b", gate.bootstrap, "-P", "-t", topic, "-p", str(p),
                "-X", "message.max.bytes=2000000", "-X", "linger.ms=20"],
               input=b"\n".join(vs) + b"\n", timeout=120)
    after = sl.scrape(gate)
    spliced = sl.delta(after, before, SPLICED, **UP)
    total = sum(size * count for size, count in sizes.values())
    h.note("kcat produced %d record bytes through epochgate, %d spliced" % (total, spliced))
    for p, vs in values.items():
        got = sl.read_partition(h, cluster, topic, p)  # straight from the broker, CRCs checked
        assert [g.encode() for g in got] == vs, (p, len(got), len(vs))
    assert spliced > total // 4, spliced


def test_raw_frames_in_pieces_answered_in_order_and_stored(h):
    topic = "psplice-raw"
    cluster, gate, gc = _one_broker_gate(h, topic)
    conn = gc.ready_conn(1)
    rnd = random.Random(41)
    stored = []
    before = sl.scrape(gate)
    for version in (8, 9):
        vs = [_value(rnd, len(stored) + i, 300000) for i in range(3)]
        frame = _produce(gc, 1, topic, 0, vs, version)
        md = kw.metadata_request(gc.next_corr(), [topic], version=7)
        data = frame + md
        at = 0
        while at < len(data):
            n = min(len(data) - at, rnd.choice((7, 300, 5000, 70000, 200000)))
            conn.send(data[at:at + n])
            at += n
            time.sleep(0.002)
        r = sw.parse_produce_response(conn.recv_frame(timeout=30), version)
        assert r["partitions"][0][2] == 0, r
        assert topic in kw.parse_metadata_response(conn.recv_frame(timeout=30), 7)["topics"]
        stored += vs
    after = sl.scrape(gate)
    h.note("%d spliced" % sl.delta(after, before, SPLICED, **UP))
    assert sl.delta(after, before, SPLICED, **UP) > 0
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == stored


def test_a_runs_last_byte_alone_is_answered(h):
    """The records' last byte (v8: the frame's last; v9: before three bytes
    of tagged fields) comes alone after a pause, and a request right behind
    it: each is answered, nothing waits for bytes that are not coming."""
    topic = "psplice-tail"
    cluster, gate, gc = _one_broker_gate(h, topic)
    conn = gc.ready_conn(1)
    rnd = random.Random(49)
    stored = []
    before = sl.scrape(gate)
    for version, after_records in ((8, 0), (9, 3)):
        vs = [_value(rnd, len(stored), 300000)]
        frame = _produce(gc, 1, topic, 0, vs, version)
        cut = len(frame) - after_records - 1
        conn.send(frame[:cut])
        time.sleep(0.3)
        conn.send(frame[cut:])
        r = sw.parse_produce_response(conn.recv_frame(timeout=30), version)
        assert r["partitions"][0][2] == 0, r
        stored += vs
        # A large request sent whole right behind: its head and the one
        # before's last bytes may share a read.
        vs = [_value(rnd, len(stored), 200000)]
        md = kw.metadata_request(gc.next_corr(), [topic], version=7)
        conn.send(_produce(gc, 1, topic, 0, vs, version) + md)
        assert sw.parse_produce_response(conn.recv_frame(timeout=30), version)["partitions"][0][2] == 0
        assert topic in kw.parse_metadata_response(conn.recv_frame(timeout=30), 7)["topics"]
        stored += vs
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) > 0
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == stored


class _SlowReader:
    """Relays one broker's connections, reading what epochgate sends in
    small pieces with pauses (a small receive buffer), so epochgate's
    writes and splices to it meet a full socket; with `cut_after`, resets
    a connection once that many bytes came from epochgate (a broker gone
    in the middle of a request). Loopback only; stops at close()."""

    def __init__(self, upstream, cut_after=None):
        self.upstream = upstream
        self.cut_after = cut_after
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.address = "127.0.0.1:%d" % self.listener.getsockname()[1]
        self.stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            up = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(down, up, 0.002), daemon=True).start()
            threading.Thread(target=self._pump, args=(up, down, 0), daemon=True).start()

    def _pump(self, src, dst, pause):
        seen = 0
        try:
            while not self.stop:
                got = src.recv(8192)
                if not got:
                    break
                seen += len(got)
                if pause and self.cut_after is not None and seen > self.cut_after:
                    src.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    break  # closed below with a reset
                dst.sendall(got)
                if pause:
                    time.sleep(pause)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.listener.close()


def _relayed_gate(h, topic):
    """A one-broker cluster with `topic`, a recording relay in front of the
    broker, epochgate in front of the relay and a connection through it:
    (cluster, relay, gate, client, connection)."""
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    relay = TcpRelay(cluster.broker_address(1))
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, upstream=relay.address)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    return cluster, relay, gate, gc, gc.ready_conn(None)  # the bootstrap's upstream is the relay


def _assert_spliced_in_order(gate, before, relay, frames):
    """Record bytes were spliced since `before`, and `frames` reached the
    broker whole, in order, on one connection."""
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) > 0
    sent = [snap[0] for snap in relay.snapshots() if b"".join(frames) in snap[0]]
    assert len(sent) == 1, "every frame crossed whole, in order, on one connection"


def test_broker_gets_the_clients_bytes_in_order(h):
    topic = "psplice-exact"
    cluster, relay, gate, gc, conn = _relayed_gate(h, topic)
    rnd = random.Random(46)
    frames = [_produce(gc, 1, topic, 0, [_value(rnd, i, 500000)], 9) for i in range(3)]
    before = sl.scrape(gate)
    conn.send(b"".join(frames))
    for _ in frames:
        assert sw.parse_produce_response(conn.recv_frame(timeout=30), 9)["partitions"][0][2] == 0
    _assert_spliced_in_order(gate, before, relay, frames)


def test_head_behind_bytes_queued_in_its_turn_keeps_the_order(h):
    """A Produce head read together with bytes just queued to the broker
    (the previous streamed request's last fields, v9's three tag bytes; a
    small request forwarded whole) streams behind them, in the same write:
    the broker gets the client's bytes exactly and in order, and every
    request is answered in order."""
    topic = "psplice-behind"
    cluster, relay, gate, gc, conn = _relayed_gate(h, topic)
    rnd = random.Random(50)
    values = [_value(rnd, i, 300000) for i in range(4)]
    frames, kinds = [], []
    for i, version in enumerate((9, 9, 8, 9)):
        frames.append(_produce(gc, 1, topic, 0, [values[i]], version))
        kinds.append(("produce", version))
        if i in (1, 3):
            frames.append(kw.metadata_request(gc.next_corr(), [topic], version=7))
            kinds.append(("metadata", 7))
    before = sl.scrape(gate)
    conn.send(b"".join(frames))
    for kind, version in kinds:
        if kind == "produce":
            r = sw.parse_produce_response(conn.recv_frame(timeout=30), version)
            assert r["partitions"][0][2] == 0, r
        else:
            assert topic in kw.parse_metadata_response(conn.recv_frame(timeout=30), 7)["topics"]
    _assert_spliced_in_order(gate, before, relay, frames)
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == values


def test_broker_reading_slowly_gets_the_same_bytes(h):
    rnd = random.Random(47)
    slow_topic = "psplice-slow"
    cluster2 = h.start_cluster(1, ["%s:1:1" % slow_topic])
    slow = _SlowReader(cluster2.broker_address(1))
    h.on_close(slow.close)
    gate2 = sl.start_gate(h, cluster2, upstream=slow.address)
    gc2 = sl.GateClient(h, gate2)
    gc2.metadata([slow_topic])
    conn2 = gc2.ready_conn(None)
    vs = [_value(rnd, 10 + i, 1 << 20) for i in range(2)]
    before = sl.scrape(gate2)
    for v in vs:
        conn2.send(_produce(gc2, 1, slow_topic, 0, [v], 9))
    for _ in vs:
        r = sw.parse_produce_response(conn2.recv_frame(timeout=60), 9)
        assert r["partitions"][0][2] == 0, r
    after = sl.scrape(gate2)
    h.note("slow broker: %d spliced, %d upstream_full" % (
        sl.delta(after, before, SPLICED, **UP),
        sl.delta(after, before, "epochgate_splice_fallbacks_total", reason="upstream_full")))
    assert [g.encode() for g in sl.read_partition(h, cluster2, slow_topic, 0)] == vs


def test_broker_gone_mid_records_closes_the_client(h):
    topic = "psplice-gone"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    cut = _SlowReader(cluster.broker_address(1), cut_after=600000)
    h.on_close(cut.close)
    gate = sl.start_gate(h, cluster, upstream=cut.address)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    conn = gc.ready_conn(None)
    rnd = random.Random(48)
    conn.send(_produce(gc, None, topic, 0, [_value(rnd, 0, 1 << 20)], 9))
    try:
        conn.recv_frame(timeout=30)
        raise AssertionError("answered although the broker went away mid-request")
    except kw.WireError:
        pass  # closed: never a hang (bounded by the timeout), never another frame
    # epochgate goes on: a new connection is answered.
    gc2 = sl.GateClient(h, gate)
    assert topic in gc2.metadata([topic])["topics"]


def test_client_closing_mid_records_stores_nothing(h):
    topic = "psplice-cut"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(42)
    first = _value(rnd, 0, 1000)
    assert sl.produce_values(gc, 1, topic, 0, [first], version=9)["partitions"][0][2] == 0
    frame = _produce(gc, 1, topic, 0, [_value(rnd, 1, 1 << 20)], 9)
    cut = sl.connect(gc.brokers[1], timeout=10)
    cut.send(frame[:400000])
    time.sleep(0.3)
    cut.close()
    # epochgate goes on: a new connection is answered, and the broker has
    # only the first record (the cut request never completed).
    gc2 = sl.GateClient(h, gate)
    assert topic in gc2.metadata([topic])["topics"]
    assert sl.read_partition(h, cluster, topic, 0) == [first.decode()]


def test_fenced_partition_reads_the_whole_frame(h):
    topic = "psplice-fenced"
    cluster = h.start_cluster(2, ["%s:1:2" % topic])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    leader = cluster.partition(topic, 0)["leader"]
    other = sl.other_broker(leader, 2)
    rnd = random.Random(43)
    before = sl.scrape(gate)
    r = sl.produce_values(gc, other, topic, 0, [_value(rnd, 0, 400000)], acks=1, version=10)
    after = sl.scrape(gate)
    assert r["partitions"][0][2] == 6, r  # NOT_LEADER_OR_FOLLOWER, answered by epochgate
    assert sl.delta(after, before, SPLICED, **UP) == 0
    gc.ready_conn(leader)  # dialled first: a request read while dialing is read whole
    r = sl.produce_values(gc, leader, topic, 0, [_value(rnd, 1, 400000)], acks=1, version=10)
    assert r["partitions"][0][2] == 0, r
    assert sl.delta(sl.scrape(gate), after, SPLICED, **UP) > 0


def test_reroute_rule_reads_the_whole_frame(h):
    topic = "psplice-reroute"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config=sl.reroute_config(topic))
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(44)
    vs = [_value(rnd, 0, 400000)]
    before = sl.scrape(gate)
    r = sl.produce_values(gc, 1, topic, 0, vs, acks=1, version=10)
    assert r["partitions"][0][2] == 0, r
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) == 0
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == vs


def test_splice_off_same_answers(h):
    topic = "psplice-off"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config="limits:\n  splice_min_bytes: 0\n")
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(45)
    vs = [_value(rnd, 0, 400000), _value(rnd, 1, 400000)]
    before = sl.scrape(gate)
    r = sl.produce_values(gc, 1, topic, 0, vs, acks=1, version=10)
    assert r["partitions"][0][2] == 0, r
    assert sl.delta(sl.scrape(gate), before, SPLICED, **UP) == 0
    assert [g.encode() for g in sl.read_partition(h, cluster, topic, 0)] == vs


if __name__ == "__main__":
    harness.main(globals())
