"""Clients that go away with a request in flight leave nothing behind.

Thousands of client connections (loopback, bounded in count and time), each
closed with a FIN or a RST while epochgate still owes it an answer:

| shape                          | what is in flight when the client goes            |
|--------------------------------|---------------------------------------------------|
| ApiVersions, close             | the request, read while the upstream is dialed    |
| Metadata after ApiVersions     | Metadata, forwarded behind the ApiVersions answer |
| Produce acks=1                 | the Produce, at the partition's leader            |
| Fetch, max_wait 3 s            | a long poll the broker holds (nothing to read)    |
| Metadata to a slow broker      | broker answers after 200 ms (mock `rtt`)          |
| half a frame, RST              | a partial request frame                           |
| nothing, close at once         | the upstream dial                                 |

over plaintext and over client TLS. A plaintext client's FIN behind whole
requests is a half-close to epochgate, as to Kafka's brokers: its session
still dials, forwards them and writes the answers before it closes, for at
most `drain_timeout_ms` (30 s) after the FIN; under a loaded run the
broker can keep those dials waiting for most of that. Afterwards, with every
client gone:
- the gauges of what clients leave held (epochgate_sessions_live,
  epochgate_in_flight_requests, epochgate_upstream_connections_live,
  epochgate_buffer_pool_buffers and _bytes) are exported and return to 0,
  within that bound;
- epochgate's resident memory is back within 4 MiB of what it was after a
  warm-up round of the same shapes;
- descriptors are back to where they were;
- epochgate read the requests (epochgate_requests_total) and answered a
  client that stayed, so the churn was real and harmed no one else.
"""

import os
import ssl
import time

from faults_common import harness, kw, metric_of  # noqa: E402
from epochgate_testlib import client_churn  # noqa: E402
from epochgate_testlib import scenario_wire as sw  # noqa: E402
from epochgate_testlib import tls_lib  # noqa: E402

TOPIC = "churn"
ANSWER_AFTER_EOF_S = 30  # drain_timeout_ms: how long a session answers after its client's FIN
RSS_BOUND = 4 << 20     # bytes above the warmed-up baseline
SLOW_RTT_MS = 200       # the slow broker's delay on every answer
FETCH_WAIT_MS = 3000    # the long poll the broker holds


def _rig(h, tls):
    cluster = h.start_cluster(3, ["%s:3:3" % TOPIC])
    args = ["--log-level", "info"]
    ctx = None
    if tls:
        c = tls_lib.certs(h)
        args += tls_lib.write_gate_config(h, c, client_tls=True, upstream_tls=False)
        ctx = ssl.create_default_context(cafile=c.ca)
    gate = h.start_gate(cluster.bootstrap, args)
    return cluster, gate, ctx


def _listeners(gate, ctx):
    """epochgate's listener per node id, and each partition's leader."""
    conn = kw.Connection(*gate.bootstrap_address, tls=ctx)
    try:
        conn.send(kw.metadata_request(1, [TOPIC], version=1))
        md = kw.parse_metadata_response(conn.recv_frame(), 1)
    finally:
        conn.close()
    nodes = {nid: (host, port) for nid, (host, port, _) in md["brokers"].items()}
    leaders = {p: info["leader"] for p, info in md["topics"][TOPIC]["partitions"].items()}
    return nodes, leaders


def _jobs(cluster, gate, ctx):
    """Two lists of [(name, shape, address, tls, server name)], every shape
    with a FIN and with a RST: clients that leave right after sending (their
    sessions are still dialing, or just forwarded the request), and clients
    that leave once the session is open, with a request owed upstream."""
    nodes, leaders = _listeners(gate, ctx)
    boot = gate.bootstrap_address
    produce_at, fetch_at = nodes[leaders[0]], nodes[leaders[1]]
    # The slow broker is neither partition's leader where the cluster allows
    # it, so the other shapes keep their pace.
    slow = next((n for n in sorted(nodes) if n not in (leaders[0], leaders[1])), max(nodes))
    cluster.cmd("rtt %d %d" % (slow, SLOW_RTT_MS))
    api_versions = kw.api_versions_request(0x4304, 0)
    metadata = kw.metadata_request(0x4301, [TOPIC], version=1)
    produce = kw.produce_request(0x4302, TOPIC, 0, kw.record_batch([b"churn"]), acks=1)
    # Partition 1 stays empty: a Fetch for 1 MiB from offset 0 waits its max_wait.
    fetch = sw.fetch_request(0x4303, TOPIC, [(1, -1, 0)], version=12,
                             max_wait_ms=FETCH_WAIT_MS, min_bytes=1 << 20)
    requests = [("api_versions", api_versions, boot), ("metadata", metadata, boot),
                ("produce_acks1", produce, produce_at), ("fetch_max_wait", fetch, fetch_at),
                ("slow_broker_metadata", metadata, nodes[slow])]
    at_once, upstream = [], []
    for rst in (False, True):
        close = "_rst" if rst else "_fin"
        for name, frame, address in requests:
            at_once.append((name + close, client_churn.request_then_close(frame, rst), address))
            if name != "api_versions":
                upstream.append(("after_answer_" + name + close,
                                 client_churn.in_flight_upstream_then_close(frame, rst), address))
        at_once.append(("close_at_once" + close, client_churn.close_at_once(rst), boot))
    at_once.append(("half_frame_rst", client_churn.half_frame_then_close(metadata, True), boot))
    return ([(n, shape, a, ctx, None) for n, shape, a in at_once],
            [(n, shape, a, ctx, None) for n, shape, a in upstream])


def _churn(jobs, count, threads, seconds):
    churn = client_churn.Churn(jobs, threads=threads, count=count, seconds=seconds).start()
    assert churn.join(seconds + 30), "churn threads still running"
    assert not churn.failed, "connections failed: %s %s" % (churn.failed, churn.errors[:5])
    return churn


def _settled_rss(pid, baseline, timeout=12.0):
    """RSS once it is within the bound, or its last value after `timeout`:
    epochgate trims its heap once a second after it let go of memory."""
    deadline = time.monotonic() + timeout
    while True:
        rss = client_churn.rss_bytes(pid)
        if rss <= baseline + RSS_BOUND or time.monotonic() >= deadline:
            return rss
        time.sleep(0.5)


def _sanitized(binary):
    """True for an AddressSanitizer build of epochgate (EPOCHGATE_SANITIZE)."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


def _fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def _leaves_nothing(h, tls, at_once_count, upstream_count):
    cluster, gate, ctx = _rig(h, tls)
    pid = gate.proc.proc.pid
    text = gate.metrics()
    missing = [g for g in client_churn.HELD_GAUGES + client_churn.POOL_GAUGES
               if g not in text]
    assert not missing, "/metrics does not export %s" % missing
    at_once, upstream = _jobs(cluster, gate, ctx)
    # Warm-up: every shape a few times, one client at a time, so the
    # baseline has the code paths, TLS state and allocator arenas any
    # running epochgate has.
    _churn(at_once + upstream, count=5 * len(at_once + upstream), threads=1, seconds=60)
    held = client_churn.wait_released(gate, timeout=ANSWER_AFTER_EOF_S + 15)
    assert all(v == 0 for v in held.values()), "held after the warm-up: %s" % held
    time.sleep(1.5)
    baseline, fds_before = client_churn.rss_bytes(pid), _fds(pid)
    requests_before = {api: metric_of(gate, "epochgate_requests_total", api=api)
                       for api in ("fetch", "produce", "metadata")}

    # Clients that leave as soon as they sent, as fast as they come: many
    # sessions whose client has gone are alive at once.
    burst = _churn(at_once, count=at_once_count, threads=8, seconds=60)
    # Clients that leave with a request owed upstream (a long poll, a slow
    # broker, a Produce at its leader).
    owed = _churn(upstream, count=upstream_count, threads=24, seconds=60)
    h.note("%d connections leaving at once, %d with a request owed upstream (%s)"
           % (burst.total(), owed.total(), "TLS" if tls else "plaintext"))

    held = client_churn.wait_released(gate, timeout=ANSWER_AFTER_EOF_S + 15)
    assert all(v == 0 for v in held.values()), \
        "still held after every client left: %s" % held
    if _sanitized(h.epochgate_path):
        # ASan keeps freed memory in its quarantine on purpose: the gauges
        # above are what this build can be judged by.
        h.note("sanitizer build: RSS %.1f -> %.1f MiB, not judged" % (
            baseline / 2**20, client_churn.rss_bytes(pid) / 2**20))
    else:
        rss = _settled_rss(pid, baseline)
        h.note("RSS %.1f MiB after warm-up, %.1f MiB after the churn (bound +%d MiB)"
               % (baseline / 2**20, rss / 2**20, RSS_BOUND >> 20))
        assert rss <= baseline + RSS_BOUND, \
            "RSS grew from %.1f to %.1f MiB over %d connections that left requests in " \
            "flight" % (baseline / 2**20, rss / 2**20, burst.total() + owed.total())
    assert _fds(pid) <= fds_before + 2, "descriptors %d -> %d" % (fds_before, _fds(pid))

    # The churn reached epochgate (at least half the requests sent behind an
    # answered ApiVersions were read: their clients waited for that answer),
    # and a client that stays is still served.
    for api, job in (("fetch", "fetch_max_wait"), ("produce", "produce_acks1"),
                     ("metadata", "metadata")):
        sent = sum(n for name, n in owed.done.items()
                   if name.startswith("after_answer_" + job))
        read = metric_of(gate, "epochgate_requests_total", api=api) - requests_before[api]
        assert sent > 0 and read >= sent // 2, "%d %s requests read of %d sent" % (
            read, api, sent)
    conn = kw.Connection(*gate.bootstrap_address, tls=ctx)
    try:
        conn.send(kw.metadata_request(7, [TOPIC], version=1))
        md = kw.parse_metadata_response(conn.recv_frame(), 1)
    finally:
        conn.close()
    assert md["topics"][TOPIC]["error"] == 0


def test_plaintext_clients_leaving_mid_request_leave_nothing(h):
    _leaves_nothing(h, tls=False, at_once_count=3000, upstream_count=1000)


test_plaintext_clients_leaving_mid_request_leave_nothing.timeout = 240


def test_tls_clients_leaving_mid_request_leave_nothing(h):
    _leaves_nothing(h, tls=True, at_once_count=600, upstream_count=300)


test_tls_clients_leaving_mid_request_leave_nothing.timeout = 240


if __name__ == "__main__":
    harness.main(globals())
