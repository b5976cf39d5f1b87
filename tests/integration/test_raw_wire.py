"""Raw Kafka frames through epochgate, with our own encoder (kafka_wire.py)
and a recording TCP relay between epochgate and the bootstrap broker:

- a frame of an API epochgate does not decode crosses byte-identical in both
  directions;
- 100 pipelined requests come back in request order, each with its own
  correlation id;
- Produce with acks=0 gets no response (the mock cluster answers it anyway,
  a real broker never does: epochgate must drop that answer) and the
  connection keeps working.

With --direct the client talks to the relay in front of the mock cluster;
the acks=0 check is then inverted (the mock's stray answer must be seen),
proving the check notices a response when there is one."""

import random
import socket

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import kafka_wire as kw  # noqa: E402
from epochgate_testlib.tcp_relay import TcpRelay  # noqa: E402

TOPIC = "wire"


def _setup(h):
    """Cluster, a relay in front of broker 1, and (unless --direct) epochgate
    whose only bootstrap is that relay. Returns (cluster, relay, (host, port))
    of the address the client should use."""
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    relay = TcpRelay(cluster.broker_address(1))
    h.on_close(relay.close)
    bootstrap, _ = h.front(cluster, upstream=relay.address)
    return cluster, relay, harness.parse_hostport(bootstrap.split(",")[0])


def _connect(address, timeout=10.0):
    return kw.Connection(address[0], address[1], timeout=timeout)


def _exchange(conn, frame):
    conn.send(frame)
    return conn.recv_frame()


def _relayed_response(relay, request, correlation_id):
    """The response frame the broker sent for `request` (found by its exact
    bytes in one relayed connection), or None."""
    for to_upstream, to_downstream in relay.snapshots():
        if request in to_upstream:
            frames, _ = kw.split_frames(to_downstream)
            for f in frames:
                if kw.frame_correlation_id(f, is_request=False) == correlation_id:
                    return f
    return None


def test_undecoded_api_crosses_byte_identical(h):
    cluster, relay, address = _setup(h)
    conn = _connect(address)
    h.on_close(conn.close)
    # OffsetFetch v1 and Heartbeat v0: group APIs epochgate forwards without
    # decoding (and the mock cluster implements), with odd correlation ids.
    requests = [
        (kw.offset_fetch_request(0x5EED0001, "wire-group", {TOPIC: [0, 1, 2]}), 0x5EED0001),
        (kw.heartbeat_request(-7, "wire-group", 3, "member-x"), -7),
        (kw.offset_fetch_request(0x7FFFFFFF, "g\u00e9", {TOPIC: [2], "absent": [0]}), 0x7FFFFFFF),
    ]
    for request, corr in requests:
        response = _exchange(conn, request)
        assert kw.frame_correlation_id(response, is_request=False) == corr
        seen = harness.wait_until(lambda: _relayed_response(relay, request, corr), 5,
                                  what="the request's bytes at the broker side of the relay")
        assert seen == response, "response differs from what the broker sent:\n%r\n%r" % (
            seen, response)
    corr, offsets = kw.parse_offset_fetch_response(response)
    assert (TOPIC, 2) in offsets, offsets
    h.note("%d undecoded frames identical both ways" % len(requests))


def test_pipelined_100_requests_answered_in_order(h):
    cluster, relay, address = _setup(h)
    conn = _connect(address, timeout=20)
    h.on_close(conn.close)
    rnd = random.Random(20240611)
    ids = rnd.sample(range(-2**31, 2**31), 100)
    kinds, batch = [], b""
    for i, corr in enumerate(ids):
        kind = ("apiversions", "metadata", "offsetfetch", "apiversions1")[i % 4]
        if kind == "apiversions":
            batch += kw.api_versions_request(corr, 0)
        elif kind == "apiversions1":
            batch += kw.api_versions_request(corr, 1)
        elif kind == "metadata":
            batch += kw.metadata_request(corr, [TOPIC], version=1)
        else:
            batch += kw.offset_fetch_request(corr, "pipeline-group", {TOPIC: [i % 3]})
        kinds.append(kind)
    conn.send(batch)  # all 100 before reading anything
    mock_ports = set(cluster.ports)
    for i, (corr, kind) in enumerate(zip(ids, kinds)):
        frame = conn.recv_frame(timeout=20)
        got = kw.frame_correlation_id(frame, is_request=False)
        assert got == corr, "response %d has correlation id %d, expected %d (%s)" % (
            i, got, corr, kind)
        if kind.startswith("apiversions"):
            _, error, apis = kw.parse_api_versions_response(frame, 1 if kind == "apiversions1" else 0)
            assert error == 0 and kw.API_PRODUCE in apis, (error, apis)
        elif kind == "metadata":
            md = kw.parse_metadata_response(frame, 1)
            assert sorted(md["brokers"]) == [1, 2, 3], md["brokers"]
            assert TOPIC in md["topics"] and len(md["topics"][TOPIC]["partitions"]) == 3
            ports = {port for _, port, _ in md["brokers"].values()}
            if not h.direct:
                assert not ports & mock_ports, "upstream ports in Metadata: %s" % ports
        else:
            kw.parse_offset_fetch_response(frame)
    assert conn.expect_silence(0.5), "extra bytes after the 100th response"


def test_produce_acks0_gets_no_response_and_connection_keeps_working(h):
    cluster, relay, address = _setup(h)
    boot = _connect(address)
    h.on_close(boot.close)
    md = kw.parse_metadata_response(_exchange(boot, kw.metadata_request(1, [TOPIC], 1)), 1)
    leader = md["topics"][TOPIC]["partitions"][0]["leader"]
    host, port, _ = md["brokers"][leader]
    conn = _connect((host, port))
    h.on_close(conn.close)

    def latest():
        _, offs = kw.parse_list_offsets_response(
            _exchange(conn, kw.list_offsets_request(77, TOPIC, [0], -1)))
        offset, error = offs[(TOPIC, 0)]
        assert error == 0, "ListOffsets error %d" % error
        return offset

    before = latest()
    # The mock cluster answers acks=0 produce; epochgate must swallow that.
    # With --direct the stray answers are expected, which shows this test
    # does notice a response when one arrives.
    stray = h.direct

    def expect(corr_wanted, produce_corr):
        frame = conn.recv_frame(timeout=10)
        corr = kw.frame_correlation_id(frame, is_request=False)
        if stray and corr == produce_corr:
            frame = conn.recv_frame(timeout=10)
            corr = kw.frame_correlation_id(frame, is_request=False)
            expect.strays += 1
        assert corr == corr_wanted, (
            "got correlation id %d, expected %d: a response to the acks=0 produce %d reached "
            "the client" % (corr, corr_wanted, produce_corr))
        return frame
    expect.strays = 0

    values = [b"acks0-%d" % i for i in range(5)]
    # acks=0 produce, then ApiVersions: the first answer must be ApiVersions'.
    conn.send(kw.produce_request(1001, TOPIC, 0, kw.record_batch(values), acks=0)
              + kw.api_versions_request(1002))
    _, error, _ = kw.parse_api_versions_response(expect(1002, 1001), 0)
    assert error == 0
    # Interleave more acks=0 produces with requests that expect answers.
    more = b"".join(kw.produce_request(2000 + i, TOPIC, 0, kw.record_batch([b"m%d" % i]), acks=0)
                    + kw.api_versions_request(3000 + i) for i in range(10))
    conn.send(more)
    for i in range(10):
        expect(3000 + i, 2000 + i)
    assert conn.expect_silence(1.0), "a response arrived for an acks=0 produce"
    if stray:
        assert expect.strays == 11, "mock answered %d of 11 acks=0 produces" % expect.strays
        h.note("direct: the mock answered all 11 acks=0 produces, as documented")
    # The records were written, and an acks=1 produce on the same connection
    # is answered normally.
    after = harness.wait_until(lambda: (lambda o: o if o >= before + 15 else None)(latest()), 5,
                               what="15 acks=0 records to be written")
    assert after == before + 15, (before, after)
    corr, result = kw.parse_produce_response(
        _exchange(conn, kw.produce_request(4242, TOPIC, 0, kw.record_batch([b"acks1"]), acks=1)))
    assert corr == 4242 and result[(TOPIC, 0)] == (0, after), result
    # A real client reads back exactly what the hand-made batches carried
    # (CRC checked), so the frames above were valid Kafka.
    out = h.kcat(["-b", cluster.bootstrap, "-C", "-t", TOPIC, "-p", "0", "-o", str(before),
                  "-c", "16", "-e", "-f", "%s\n", "-X", "check.crcs=true"]).stdout.split()
    assert out == [v.decode() for v in values] + ["m%d" % i for i in range(10)] + ["acks1"], out


if __name__ == "__main__":
    harness.main(globals())
