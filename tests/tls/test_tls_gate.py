"""TLS on both sides of epochgate, seen by independent clients: TLS client
-> epochgate -> TLS broker, where the brokers' TLS listeners are Debian's
HAProxy in front of the mock cluster (tests/tls/test_rig.py proves that rig
first).

- produce, consume and a consumer group with librdkafka 2.15.1, kcat
  (librdkafka 2.0.2), kafka-python and confluent-kafka, security.protocol=SSL
  with host names verified; the clients only ever dial epochgate's TLS
  listeners, and every upstream connection is a TLS one HAProxy logged.
- a leader move under a running producer and consumer: the fence and its
  KIP-951 hint cross TLS, nothing is lost or duplicated.
- mTLS on both sides: epochgate requires the client's certificate and
  presents its own to HAProxy, which requires it too.
"""

import os
import ssl

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402

from epochgate_testlib import scenario_lib as sl  # noqa: E402


def _gate(h, tc, **kw):
    return h.start_gate(tc.bootstrap, tls_lib.write_gate_config(h, tc.certs, **kw))


def _client_context(c, client=None):
    ctx = ssl.create_default_context(cafile=c.ca)
    if client:
        ctx.load_cert_chain(c.path(client, "crt"), c.path(client, "key"))
    return ctx


def _assert_upstream_tls(tc, gate_started):
    """Every HAProxy frontend relayed at least one TLS connection (epochgate's)."""
    log = tc.haproxy_log()
    for i in range(len(tc.ports)):
        assert "b%d~ b%d_up/s0" % (i, i) in log, "no TLS connection on frontend b%d:\n%s" % (
            i, log[-1500:])


def test_clients_round_trip_over_tls_both_sides(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"])
    gate = _gate(h, tc)
    ssl_props = tls_lib.rdkafka_ssl(tc.certs)
    # kcat: Metadata through epochgate names epochgate's TLS listeners.
    import json
    md = json.loads(h.kcat(["-b", gate.bootstrap, "-L", "-J"] + ssl_props).stdout)
    ports = {b["id"]: int(b["name"].rsplit(":", 1)[1]) for b in md["brokers"]}
    assert not set(ports.values()) & set(tc.ports) and not set(ports.values()) & set(
        tc.cluster.ports), (ports, tc.ports)
    for node, port in ports.items():
        hs = tls_lib.s_client(h, port, ca=tc.certs.ca, verify_host="localhost")
        assert hs.verify_code == 0, hs.out[-800:]
    # librdkafka 2.15.1: idempotent keyed produce + consumer group.
    log = os.path.join(h.workdir, "rdkafka.log")
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "3000",
                         "--partitions-keyed", "--idempotent", "--consume-group", "g1",
                         "--debug", "broker", "--log-file", log] + ssl_props)
    assert s["passed"], s
    dialled = h.connected_ports(log)
    assert dialled and not dialled & (set(tc.ports) | set(tc.cluster.ports)), dialled
    for client in ("kafka-python", "confluent-kafka"):
        out = h.python_peer([client, "--bootstrap", gate.bootstrap, "--topic", "t",
                             "--messages", "300"] + tls_lib.peer_ssl(tc.certs))
        assert out["passed"], out
    _assert_upstream_tls(tc, gate)
    # The handshakes were counted on both sides.
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 result="ok") > 0
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="upstream",
                                 result="ok") > 0


test_clients_round_trip_over_tls_both_sides.timeout = 240


def test_leader_move_fenced_with_hint_over_tls(h):
    tc = tls_lib.TlsCluster(h, ["t:3:3"])
    gate = _gate(h, tc)
    gc = sl.GateClient(h, gate, tls=_client_context(tc.certs))
    sl.open_node_connections(gc, ["t"])
    log = os.path.join(h.workdir, "rdkafka.log")
    timeline = os.path.join(h.workdir, "timeline.csv")
    start = sl.end_offset(tc.cluster, "t", 0)
    check = h.rdkafka_check_async(
        ["--bootstrap", gate.bootstrap, "--topic", "t", "--partitions-keyed", "--idempotent",
         "--duration-s", "6", "--rate", "400", "--concurrent", "--consume-group", "g-move",
         "--timeline", timeline, "--debug", "broker,metadata,msg", "--log-file", log] +
        tls_lib.rdkafka_ssl(tc.certs))
    # The move must find the producer writing to partition 0's old leader, or
    # nothing is fenced; TLS handshakes under ASan on a busy machine can take
    # longer than any fixed pause.
    sl.wait_end_offset_above(tc.cluster, "t", 0, start + 200, timeout=30,
                             what="the producer to write 200 records to partition 0")
    before = sl.scrape(gate)
    new = sl.other_broker(tc.cluster.partition("t", 0)["leader"])
    moved_us, epoch, old, _ = sl.move_view_first(tc.cluster, gc, "t", 0, new)
    s = check.result(timeout=90)
    after = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0, s
    assert sl.delta(after, before, sl.FENCED) >= 1, "no request fenced at broker %d" % old
    # The hint's address is epochgate's TLS listener for the new leader.
    gc.metadata(["t"])
    hint_host, hint_port = gc.brokers[new]
    assert hint_port not in tc.ports and hint_port not in tc.cluster.ports
    rows = harness.read_timeline(timeline)
    assert harness.recovery_ms(rows, moved_us, 0, new) is not None, "no ack from the new leader"


test_leader_move_fenced_with_hint_over_tls.timeout = 200


def test_mtls_both_sides(h):
    tc = tls_lib.TlsCluster(h, ["t:3:1"], mtls=True)
    c = tc.certs
    gate = _gate(h, tc, client_auth="required", upstream_client="client")
    # No client certificate: epochgate refuses the handshake.
    r = h.kcat(["-b", gate.bootstrap, "-L", "-m", "5"] + tls_lib.rdkafka_ssl(c), check=False,
               timeout=30)
    assert r.returncode != 0 and "certificate required" in r.stderr, r.stderr[-800:]
    r = h.kcat(["-b", gate.bootstrap, "-L", "-m", "5"] +
               tls_lib.rdkafka_ssl(c, "untrusted-client"), check=False, timeout=30)
    assert r.returncode != 0 and "unknown ca" in r.stderr, r.stderr[-800:]
    # With it: the round trip works, and epochgate showed HAProxy its own.
    s = h.rdkafka_check(["--bootstrap", gate.bootstrap, "--topic", "t", "--messages", "1000",
                         "--partitions-keyed", "--consume-group", "g-mtls"] +
                        tls_lib.rdkafka_ssl(c, "client"))
    assert s["passed"], s
    out = h.python_peer(["kafka-python", "--bootstrap", gate.bootstrap, "--topic", "t",
                         "--messages", "200"] + tls_lib.peer_ssl(c, "client"))
    assert out["passed"], out
    _assert_upstream_tls(tc, gate)
    assert tls_lib.metrics_value(gate, "epochgate_tls_handshakes_total", side="client",
                                 result="failed", reason="no_client_certificate") >= 1


test_mtls_both_sides.timeout = 200


if __name__ == "__main__":
    harness.main(globals())
