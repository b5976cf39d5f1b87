"""Large frames through epochgate's write-through path.

Unchanged frames of 16 KiB and more go from the buffer they were read into
straight to the other socket (proxy/net/connection.h write_through); smaller ones
are copied and coalesced. These runs pin what a client must not be able to
tell apart: order with queued and locally answered responses, byte-exact
records and Fetch responses, the KIP-951 bridge's in-place version patch, and
byte counters that count written-through bytes. (First written as a
reviewer's experiments against the change.)
"""

import random
import socket
import time

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import harness, kw  # noqa: E402

TOPIC = "large"

def _bytes(m):
    return {d: m.sum("epochgate_bytes_total", direction=d) for d in ("client_to_upstream", "upstream_to_client")}

def test_bridge_large_produce_pipelined(h):
    # Produce v10 frames from 50 B to 2 MB pipelined in one send over a v9
    # broker: each is bridged (version patched in the read buffer) and most
    # are written through; all acknowledged in order, stored byte for byte.
    cluster = h.start_cluster(3, ["%s:1:1" % TOPIC])
    cluster.cmd("apiversion 0 0 9")
    cluster.cmd("apiversion 1 0 15")
    gate = sl.start_gate(h, cluster)
    gc = sl.GateClient(h, gate)
    md = gc.metadata_v12([TOPIC])
    leader = md["topics"][TOPIC]["partitions"][0]["leader"]
    conn = gc.conn(leader)
    conn.send(kw.api_versions_request(gc.next_corr(), 0))
    _, err, apis = kw.parse_api_versions_response(conn.recv_frame(), 0)
    assert apis[kw.API_PRODUCE][1] == 10, apis
    before = sl.scrape(gate)
    rnd = random.Random(1)
    sizes = [20000, 16300, 300000, 17000, 2000000, 50, 40000]
    values, frames, corrs = [], b"", []
    for i, n in enumerate(sizes):
        v = (b"%06d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(min(n, 1000))) * (n // 1000 + 1)
        v = v[:n]
        values.append(v)
        c = gc.next_corr(); corrs.append(c)
        frames += sw.produce_request(c, TOPIC, [(0, kw.record_batch([v]))], acks=-1, version=10)
    conn.send(frames)
    for i, c in enumerate(corrs):
        r = sw.parse_produce_response(conn.recv_frame(timeout=20), 10)
        assert r["correlation_id"] == c, (i, r)
        assert r["partitions"][0][2] == 0, (i, r)
    after = sl.scrape(gate)
    got = sl.read_partition(h, cluster, TOPIC, 0, count=len(sizes), timeout=30)
    assert [g.encode() for g in got] == values, [len(g) for g in got]
    d = sl.delta(after, before, sl.DOWNGRADES, api="produce")
    b0, b1 = _bytes(before), _bytes(after)
    h.note("downgrades %s c2u bytes %d (sent %d)" % (d, b1["client_to_upstream"] - b0["client_to_upstream"], len(frames)))
    assert d == len(sizes), d
    assert b1["client_to_upstream"] - b0["client_to_upstream"] == len(frames)


def test_large_fetch_slow_client_order(h):
    # A slow reader with small watermarks: Fetch responses of 16 KB-900 KB
    # (written through when the queue is empty, copied behind it otherwise),
    # Metadata, and locally answered ApiVersions v99, pipelined; every
    # response in request order, each Fetch byte-identical to a direct one.
    cluster = h.start_cluster(1, ["%s:1:1" % TOPIC])
    cfg = "limits:\n  high_watermark_bytes: 65536\n  low_watermark_bytes: 16384\n"
    gate = sl.start_gate(h, cluster, config=cfg)
    gc = sl.GateClient(h, gate)
    md = gc.metadata([TOPIC])
    leader = 1
    rnd = random.Random(2)
    values = []
    for i in range(8):
        n = [20000, 200000, 16000, 900000, 30000, 17000, 500000, 100][i]
        v = ((b"%06d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(1000)) * (n // 1000 + 1))[:n]
        values.append(v)
        r = sl.produce_values(gc, leader, TOPIC, 0, [v], version=9)
        assert r["partitions"][0][2] == 0, r
    direct = sl.connect(cluster.broker_address(leader), timeout=20)
    h.on_close(direct.close)
    # pipeline: fetches at every offset, metadata, locally answered ApiVersions v99
    reqs = []
    corr = 5000
    for rep in range(4):
        for off in range(8):
            corr += 1
            reqs.append(("fetch", corr, sw.fetch_request(corr, TOPIC, [(0, -1, off)], version=11)))
            if off % 3 == 0:
                corr += 1
                reqs.append(("md", corr, kw.metadata_request(corr, [TOPIC], version=7)))
            if off % 4 == 1:
                corr += 1
                reqs.append(("av99", corr, kw.request_frame(kw.API_API_VERSIONS, 99, corr, b"")))
    expected = {}
    for kind, c, f in reqs:
        if kind == "fetch":
            direct.send(f)
            expected[c] = direct.recv_frame(timeout=20)
    before = sl.scrape(gate)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8192)
    host, port = gc.brokers[leader]
    s.settimeout(30)
    s.connect((host, port))
    h.on_close(s.close)
    s.sendall(b"".join(f for _, _, f in reqs))
    time.sleep(1.0)
    data = b""
    total = 0
    deadline = time.monotonic() + 60
    frames = []
    while len(frames) < len(reqs) and time.monotonic() < deadline:
        chunk = s.recv(3000 if len(data) < 2000000 else 1 << 20)
        if not chunk:
            raise AssertionError("closed after %d frames" % len(frames))
        data += chunk
        total += len(chunk)
        fr, rest = kw.split_frames(data)
        frames += fr
        data = rest
        if total < 300000:
            time.sleep(0.0005)
    assert len(frames) == len(reqs), (len(frames), len(reqs))
    for (kind, c, f), got in zip(reqs, frames):
        gc_ = kw.frame_correlation_id(got, False)
        assert gc_ == c, (kind, c, gc_)
        if kind == "fetch":
            assert got == expected[c], (c, len(got), len(expected[c]))
    time.sleep(0.3)
    after = sl.scrape(gate)
    d = after.sum("epochgate_bytes_total", direction="upstream_to_client") - before.sum("epochgate_bytes_total", direction="upstream_to_client")
    h.note("received %d bytes in %d frames; upstream_to_client delta %d" % (total, len(frames), d))
    assert d == total, "bytes_total{upstream_to_client} grew by %d, the client read %d" % (d, total)

if __name__ == "__main__":
    harness.main(globals())
