"""Record bytes of streamed Fetch responses spliced socket to socket.

With plain TCP on both sides, a streamed Fetch response's record bytes go
from the broker's socket to the client's through a kernel pipe once at least
limits.splice_min_bytes of a partition's records are still to come
(docs/splice-data-path.md). These runs pin what a client must see all the
same, against the mock cluster:

- kcat (librdkafka, check.crcs=true) reads 64 KiB and 1 MiB records through
  epochgate: every record once, its bytes equal to the ones produced, most
  record bytes spliced (epochgate_spliced_bytes_total);
- a client that reads slowly gets the same bytes as from the broker while
  epochgate's buffers stay far below the response's size (the part of a
  splice its socket did not take is queued, and the broker is read again
  only once that is written);
- a broker that closes its connection in the middle of a response's records
  closes the client's connection after a prefix of the broker's bytes (no
  hang, nothing reordered), and epochgate keeps serving;
- a response after a spliced one on the same connection is spliced from
  its first fields on (its first read takes no pool block of records);
- limits.splice_min_bytes: 0 turns it off with the same bytes.
TLS on one side keeps the copying path: tests/tls/test_tls_streaming.py.
"""

import hashlib
import random
import socket
import struct
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.fault_relay import FaultRelay, mark  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

SPLICED = "epochgate_spliced_bytes_total"
FALLBACKS = "epochgate_splice_fallbacks_total"
STREAMED = "epochgate_responses_streamed_total"
BUFFERED = "epochgate_buffered_bytes"


def _value(rnd, i, n):
    # Printable, so kcat's line output carries it whole.
    return ((b"%07d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(997)) * (n // 997 + 1))[:n]


def _produce_direct(h, cluster, topic, partition, values):
    """One record batch of `values` straight to the broker (not through epochgate)."""
    direct = sl.connect(cluster.broker_address(1), timeout=30)
    h.on_close(direct.close)
    direct.send(sw.produce_request(9, topic, [(partition, kw.record_batch(values))], acks=1,
                                   version=9))
    r = sw.parse_produce_response(direct.recv_frame(timeout=30), 9)
    assert r["partitions"][0][2] == 0, r
    direct.close()


def _kcat_consume(h, bootstrap, topic, count):
    return sl.kcat_rows(h, bootstrap, topic, count,
                        ["-X", "check.crcs=true", "-X", "fetch.message.max.bytes=4194304"])


def _recv_exact(sock, n, chunk=65536, pause=0.0, sample=None):
    out = b""
    while len(out) < n:
        got = sock.recv(min(chunk, n - len(out)))
        if not got:
            raise AssertionError("closed after %d of %d bytes" % (len(out), n))
        out += got
        if pause:
            time.sleep(pause)
        if sample:
            sample()
    return out


def _recv_frame(sock, **kwargs):
    prefix = _recv_exact(sock, 4)
    return prefix + _recv_exact(sock, struct.unpack(">i", prefix)[0], **kwargs)


def test_librdkafka_reads_64k_and_1m_records_spliced(h):
    topic = "splice-rdk"
    cluster = h.start_cluster(1, ["%s:2:1" % topic])
    gate = sl.start_gate(h, cluster)
    rnd = random.Random(30)
    want = []
    # Partition 0: 64 KiB records, 8 to a batch; partition 1: 1 MiB records,
    # one a batch (the mock keeps about 4 MiB of a partition).
    for partition, size, batches, per in ((0, 65536, 4, 8), (1, 1 << 20, 3, 1)):
        offset = 0
        for b in range(batches):
            values = [_value(rnd, offset + i, size) for i in range(per)]
            _produce_direct(h, cluster, topic, partition, values)
            for v in values:
                want.append((partition, offset, hashlib.sha256(v).hexdigest()))
                offset += 1
    want.sort()
    assert _kcat_consume(h, cluster.bootstrap, topic, len(want)) == want  # the control
    before = sl.scrape(gate)
    through = _kcat_consume(h, gate.bootstrap, topic, len(want))
    after = sl.scrape(gate)
    spliced = sl.delta(after, before, SPLICED)
    total = 32 * 65536 + 3 * (1 << 20)
    h.note("kcat: %d records, %d of about %d record bytes spliced, %d streamed responses"
           % (len(through), spliced, total, sl.delta(after, before, STREAMED, api="fetch")))
    missing = sorted(set(want) - set(through))
    extra = sorted(set(through) - set(want))
    assert through == want, (len(through), len(want), missing[:5], extra[:5])
    assert spliced > total // 4, spliced


def test_slow_client_gets_the_brokers_bytes_with_bounded_buffers(h):
    topic = "splice-slow"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(31)
    _produce_direct(h, cluster, topic, 0, [_value(rnd, i, 1 << 20) for i in range(4)])
    fetch = sw.fetch_request(0x3131, topic, [(0, -1, 0)], version=12)
    direct = sl.connect(cluster.broker_address(1), timeout=30)
    h.on_close(direct.close)
    direct.send(fetch)
    want = direct.recv_frame(timeout=30)
    assert len(want) > 4 << 20, len(want)
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    s.settimeout(30)
    s.connect(gc.brokers[1])
    h.on_close(s.close)
    before = sl.scrape(gate)
    peak = [0]
    last = [0.0]

    def sample():
        if time.monotonic() - last[0] > 0.1:
            last[0] = time.monotonic()
            peak[0] = max(peak[0], sl.scrape(gate).sum(BUFFERED))

    s.sendall(fetch)
    got = _recv_frame(s, chunk=8192, pause=0.004, sample=sample)
    after = sl.scrape(gate)
    h.note("%d byte response read slowly: peak buffered %d bytes, %d spliced, %d client_full"
           % (len(got), peak[0], sl.delta(after, before, SPLICED),
              sl.delta(after, before, FALLBACKS, reason="client_full")))
    assert got == want
    assert sl.delta(after, before, SPLICED) > 0
    # The response is 4 MiB; epochgate holds at most a read buffer and what
    # one splice could not hand over (each up to 256 KiB), plus the pool's blocks.
    # (The gauge is updated once a second: sampled while the read lasts.)
    assert peak[0] < 2 << 20, peak[0]


def test_broker_closing_mid_records_closes_the_client_after_a_prefix(h):
    topic = "splice-cut"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    relay = FaultRelay(cluster.broker_address(1), fault="cut")
    h.on_close(relay.close)
    gate = sl.start_gate(h, cluster, upstream=relay.address)
    rnd = random.Random(32)
    _produce_direct(h, cluster, topic, 0, [_value(rnd, i, 1 << 20) for i in range(2)])
    corr = mark(0x3232)
    fetch = sw.fetch_request(corr, topic, [(0, -1, 0)], version=12)
    direct = sl.connect(cluster.broker_address(1), timeout=30)
    h.on_close(direct.close)
    direct.send(fetch)
    want = direct.recv_frame(timeout=30)
    client = socket.create_connection(gate.bootstrap_address, timeout=30)
    h.on_close(client.close)
    client.sendall(fetch)
    got = b""
    while True:
        chunk = client.recv(65536)  # bounded by the socket timeout: never a hang
        if not chunk:
            break
        got += chunk
    h.note("client got %d of %d bytes before the close" % (len(got), len(want)))
    assert relay.faults_applied == 1
    assert 8 < len(got) < len(want), len(got)
    assert got == want[:len(got)]
    # epochgate itself goes on: a new connection is answered.
    gc = sl.GateClient(h, gate)
    assert topic in gc.metadata([topic])["topics"]


def test_a_response_after_a_spliced_one_is_spliced_from_its_first_fields(h):
    # After a spliced response the next one's first read takes its fields,
    # not a pool block (64 KiB) of its records (Connection::set_first_read_bytes):
    # with splice_min_bytes 4 KiB what is copied is a read of fields (1 KiB),
    # a run's last bytes under 4 KiB, and whatever a splice found the
    # client's socket too full for; far less than the 64 KiB block.
    topic = "splice-next"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config="limits:\n  splice_min_bytes: 4KiB\n")
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(34)
    _produce_direct(h, cluster, topic, 0, [_value(rnd, i, 100000) for i in range(5)])
    records = 5 * 100000  # values; the batch's own bytes make the records a little more
    for n in range(3):
        fetch = sw.fetch_request(0x3434 + n, topic, [(0, -1, 0)], version=12)
        want, got, before, after = sl.direct_and_through(h, cluster.broker_address(1), gate,
                                                         gc.conn(1), fetch)
        assert got == want
        spliced = sl.delta(after, before, SPLICED)
        h.note("response %d: %d bytes, %d spliced" % (n, len(got), spliced))
        if n > 0:
            assert spliced >= records - 32 * 1024, (n, spliced)


def test_splice_off_same_bytes(h):
    topic = "splice-off"
    cluster = h.start_cluster(1, ["%s:1:1" % topic])
    gate = sl.start_gate(h, cluster, config="limits:\n  splice_min_bytes: 0\n")
    gc = sl.GateClient(h, gate)
    gc.metadata([topic])
    rnd = random.Random(33)
    _produce_direct(h, cluster, topic, 0, [_value(rnd, i, 300000) for i in range(3)])
    fetch = sw.fetch_request(0x3333, topic, [(0, -1, 0)], version=12)
    want, got, before, after = sl.direct_and_through(h, cluster.broker_address(1), gate,
                                                     gc.conn(1), fetch)
    assert got == want
    assert sl.delta(after, before, STREAMED, api="fetch") == 1
    assert sl.delta(after, before, SPLICED) == 0


if __name__ == "__main__":
    harness.main(globals())
