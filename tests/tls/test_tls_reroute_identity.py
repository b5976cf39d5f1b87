"""Rerouting's identity rule when the client's identity is its TLS
certificate (docs/rerouting.md, "Identity"): epochgate requires a client
certificate (tls.client_auth: required) and cannot present the client's key
on a connection of its own, so a Produce partition whose leader moved is
never rerouted for such a client: it falls back (`identity`), the client
(librdkafka 2.15.1 with its certificate, through the HAProxy TLS rig) is
told NOT_LEADER_OR_FOLLOWER with a hint, resends, and loses or duplicates
nothing.
"""

import os
import ssl

from epochgate_testlib import tls_lib  # noqa: E402
from epochgate_testlib.tls_lib import harness  # noqa: E402

from epochgate_testlib import scenario_lib as sl  # noqa: E402

REROUTES = "epochgate_reroutes_total"
TOPIC = "t"


def test_client_certificate_identity_is_never_rerouted(h):
    tc = tls_lib.TlsCluster(h, ["%s:1:3" % TOPIC], mtls=True)
    c = tc.certs
    tc.cluster.cmd("leader %s 0 1" % TOPIC)
    rules = {"rules": [{"topics": TOPIC, "mode": "enforce", "reroute": True}]}
    gate = h.start_gate(tc.bootstrap, tls_lib.write_gate_config(
        h, c, client_auth="required", upstream_client="client", extra={"policy": rules}))
    ctx = ssl.create_default_context(cafile=c.ca)
    ctx.load_cert_chain(c.path("client", "crt"), c.path("client", "key"))
    gc = sl.GateClient(h, gate, tls=ctx)
    sl.open_node_connections(gc, [TOPIC])
    log = os.path.join(h.workdir, "mtls-producer.rdkafka.log")
    start = sl.end_offset(tc.cluster, TOPIC, 0)
    before = sl.scrape(gate)
    check = h.rdkafka_check_async(
        ["--bootstrap", gate.bootstrap, "--topic", TOPIC, "--acks", "all", "--idempotent",
         "--duration-s", "5", "--rate", "500", "--consume-group", "g-mtls-idn",
         "--debug", "broker,msg", "--log-file", log] + tls_lib.rdkafka_ssl(c, "client"))
    sl.wait_end_offset_above(tc.cluster, TOPIC, 0, start + 300, timeout=30,
                             what="the mTLS producer to write 300 records")
    sl.move_view_first(tc.cluster, gc, TOPIC, 0, 2)
    s = check.result(timeout=90)
    after = sl.scrape(gate)
    assert s["missing"] == 0 and s["duplicates"] == 0 and s["out_of_order"] == 0, s
    assert s["failed"] == 0 and s["acked"] == s["produced"] > 1000, s
    told = sl.client_leader_errors(log, TOPIC, 0)
    assert told >= 1, "the producer never saw NOT_LEADER_OR_FOLLOWER: was it rerouted?"
    identity = sl.delta(after, before, REROUTES, result="fell_back", reason="identity")
    assert identity >= 1, after.by(REROUTES, "reason")
    assert sl.delta(after, before, REROUTES, result="delivered") == 0, after.by(REROUTES, "reason")
    h.note("mTLS producer across a view-first move: %d produced, told NOT_LEADER %d times, "
           "%d partitions fell back (identity), none rerouted" % (s["produced"], told, identity))


test_client_certificate_identity_is_never_rerouted.timeout = 200


if __name__ == "__main__":
    harness.main(globals())
