"""Large Fetch responses streamed through epochgate with TLS on both sides
(docs/streaming.md): TLS client -> epochgate -> TLS broker, the brokers'
TLS listeners being Debian's HAProxy in front of the mock cluster
(tests/tls/test_rig.py proves that rig first).

- a raw Fetch of about 1 MB read over TLS in small pieces is byte-identical
  to the broker's own answer (read through HAProxy directly), and streamed;
- kcat (librdkafka, security.protocol=SSL) reads the same records through
  epochgate as from the TLS brokers directly;
- with TLS on one side only (clients over TLS, plain brokers), responses
  still stream, byte-identical, and no record byte is spliced: bytes to
  encrypt must pass through user space (docs/splice-data-path.md).
"""

import random
import ssl
import time

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402

from epochgate_testlib import scenario_lib as sl  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib.scenario_lib import kw  # noqa: E402

STREAMED = "epochgate_responses_streamed_total"


def _value(rnd, i, n):
    return ((b"%07d:" % i) + bytes(rnd.randrange(97, 123) for _ in range(997)) * (n // 997 + 1))[:n]


def _consume(h, bootstrap, topic, count, ssl_props):
    return sl.kcat_rows(h, bootstrap, topic, count,
                        ["-X", "fetch.message.max.bytes=2097152"] + ssl_props)


def test_raw_fetch_over_tls_byte_identical(h):
    tc = tls_lib.TlsCluster(h, ["tsr:1:1"], brokers=1)
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs))
    ctx = ssl.create_default_context(cafile=tc.certs.ca)
    gc = sl.GateClient(h, gate, tls=ctx)
    gc.metadata(["tsr"])
    rnd = random.Random(1)
    for b in range(3):  # the mock serves one record batch a fetch: 600 KB ones
        r = sl.produce_values(gc, 1, "tsr", 0, [_value(rnd, i, 100000) for i in range(6)],
                              version=9)
        assert r["partitions"][0][2] == 0, r
    fetches = [sw.fetch_request(gc.next_corr(), "tsr", [(0, -1, off)], version=v)
               for v, off in ((12, 0), (11, 6), (12, 12))]
    direct = sl.connect(tc.addresses[0], timeout=20, tls=ctx)
    h.on_close(direct.close)
    want = []
    for f in fetches:
        direct.send(f)
        want.append(direct.recv_frame(timeout=20))
    before = sl.scrape(gate)
    c = gc.conn(1)
    c.send(b"".join(fetches))
    got = [c.recv_frame(timeout=30) for _ in fetches]
    after = sl.scrape(gate)
    for g, w in zip(got, want):
        assert len(w) > 500000, len(w)
        assert g == w, (len(g), len(w))
    assert sl.delta(after, before, STREAMED, api="fetch") == len(fetches)


def test_kcat_consume_over_tls_matches_direct(h):
    tc = tls_lib.TlsCluster(h, ["tsk:6:1"])
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs))
    props = tls_lib.rdkafka_ssl(tc.certs)
    rnd = random.Random(2)
    # Keyed: spread evenly, within what the mock retains of each partition.
    lines = b"\n".join(b"%d\t" % i + _value(rnd, i, 8000) for i in range(1800)) + b"\n"
    h.kcat(["-b", tc.bootstrap, "-P", "-t", "tsk", "-K", "\t"] + props, input=lines, timeout=120)
    direct = _consume(h, tc.bootstrap, "tsk", 1800, props)
    before = sl.scrape(gate)
    through = _consume(h, gate.bootstrap, "tsk", 1800, props)
    after = sl.scrape(gate)
    assert len(direct) == 1800, len(direct)
    assert through == direct
    streamed = sl.delta(after, before, STREAMED, api="fetch")
    h.note("kcat over TLS: %d streamed responses" % streamed)
    assert streamed > 0


def test_client_tls_plain_broker_streams_without_splicing(h):
    certs = tls_lib.certs(h)
    cluster = h.start_cluster(1, ["tsp:1:1"])
    gate = h.start_gate(cluster.bootstrap,
                        tls_lib.write_gate_config(h, certs, client_tls=True, upstream_tls=False))
    ctx = ssl.create_default_context(cafile=certs.ca)
    gc = sl.GateClient(h, gate, tls=ctx)
    gc.metadata(["tsp"])
    rnd = random.Random(3)
    r = sl.produce_values(gc, 1, "tsp", 0, [_value(rnd, i, 200000) for i in range(4)], version=9)
    assert r["partitions"][0][2] == 0, r
    fetch = sw.fetch_request(gc.next_corr(), "tsp", [(0, -1, 0)], version=12)
    want, got, before, after = sl.direct_and_through(h, cluster.broker_address(1), gate,
                                                     gc.conn(1), fetch)
    assert len(want) > 500000, len(want)
    assert got == want, (len(got), len(want))
    assert sl.delta(after, before, STREAMED, api="fetch") == 1
    assert sl.delta(after, before, "epochgate_spliced_bytes_total") == 0


if __name__ == "__main__":
    harness.main(globals())
