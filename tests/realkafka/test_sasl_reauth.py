"""KIP-368 re-authentication against real brokers: every broker of this
module's cluster ends a SASL session after `connections.max.reauth.ms`
(3 s here), and closes a connection whose session ran out at its next
request. Clients and epochgate must log in again on the live connection
before then. The SASL_PLAINTEXT listeners of sasl_cases.py's cluster
(SCRAM users made through the Admin API), a librdkafka 2.15.1 idempotent
producer (acks=all) and consumer group for 15 s, direct and through
epochgate in the same run:

- passthrough: the clients' own re-logins cross epochgate on their
  connections (SaslHandshake and SaslAuthenticate between Kafka requests),
  and epochgate's refresher re-logs itself in (`upstream_sasl`);
- sidecar credential mode: the clients connect to epochgate without SASL and
  epochgate re-logs every upstream session in on their behalf;
- both again with OAUTHBEARER (Kafka's unsecured tokens on the brokers,
  librdkafka's own unsecured token, epochgate's from a token file).

Asserted as a user would: nothing lost, delivered twice or out of order, no
failed delivery, and the sessions stayed up: the re-logins happened (at
least two logins per connection) and, in sidecar mode, no broker closed an
upstream connection (what an expired session would show).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from epochgate_testlib import realkafka_lib as rk  # noqa: E402
from epochgate_testlib.realkafka_lib import harness, sl  # noqa: E402

REAUTH_MS = 3000
rk.SECURITY = True
rk.BROKER_CONFIG = {"connections.max.reauth.ms": str(REAUTH_MS)}

from sasl_cases import OWN_USER, USER, _assert_rd, _gate, _rd_props  # noqa: E402

sys.path.insert(0, os.path.join(rk.ROOT, "tests", "integration"))
from sasl_client import unsecured_jws  # noqa: E402

SECONDS = 15
RATE = 100
MECHANISM = "SCRAM-SHA-512"
PROTOCOL = "SASL_PLAINTEXT"


def _oauthbearer_props():
    """librdkafka's own unsecured OAUTHBEARER token (principal alice)."""
    return ["-X", "security.protocol=" + PROTOCOL, "-X", "sasl.mechanism=OAUTHBEARER",
            "-X", "enable.sasl.oauthbearer.unsecure.jwt=true",
            "-X", "sasl.oauthbearer.config=principal=" + USER]


def _oauthbearer_gate(h, c, principal, on_behalf):
    """epochgate logging in with an unsecured token of `principal` from a
    token file: its refresher, and with `on_behalf` every client session."""
    token = os.path.join(h.workdir, "token-%s" % principal)
    with open(token, "w") as f:
        f.write(unsecured_jws(principal, lifetime_s=3600) + "\n")
    cfg = ("refresher:\n  interval_ms: 2000\n"
           "upstream_sasl:\n  mechanism: OAUTHBEARER\n  token_file: %s\n" % token)
    if on_behalf:
        cfg += "  on_behalf_of_clients: true\n"
    return sl.start_gate(h, None, upstream=c.listener_bootstrap(PROTOCOL), config=cfg)


def _run(h, c, gate, tag, gate_needs_sasl, props_of=None):
    """librdkafka direct and through `gate` at once; returns (results by
    mode, metrics before, metrics after). `props_of`: the clients' SASL
    settings (default SCRAM-SHA-512 as alice)."""
    props_of = props_of or (lambda: _rd_props(c, PROTOCOL, MECHANISM))
    checks = {}
    before = sl.scrape(gate)
    for mode, bootstrap in (("direct", c.listener_bootstrap(PROTOCOL)), ("gate", gate.bootstrap)):
        topic = rk.create_topic(c, "%s-%s" % (tag, mode))
        props = props_of() if (mode == "direct" or gate_needs_sasl) else []
        checks[mode] = h.rdkafka_check_async([
            "--bootstrap", bootstrap, "--topic", topic, "--partitions-keyed", "--idempotent",
            "--acks", "all", "--duration-s", str(SECONDS), "--rate", str(RATE), "--concurrent",
            "--consume-group", "g-" + topic, "--debug", "broker,security",
            "--log-file", os.path.join(h.workdir, "rd-%s-%s.log" % (tag, mode))] + props,
            name="rd-%s-%s" % (tag, mode))
    results = {m: chk.result(timeout=SECONDS + 120, expect_pass=False) for m, chk in checks.items()}
    after = sl.scrape(gate)
    for mode, s in results.items():
        _assert_rd(s, "librdkafka %s %s" % (tag, mode))
    return results, before, after


def _relogins(after, before, side, mechanism):
    """Asserts that logins of `side` and `mechanism` (passthrough: the
    clients' own; on_behalf: epochgate's for them) happened again and again
    on the client connections of the run, none refused; returns (logins,
    client connections)."""
    def count(result):
        return sl.delta(after, before, "epochgate_sasl_authentications_total", side=side,
                        mechanism=mechanism, result=result)
    logins, failed = count("ok"), count("failed")
    conns = sl.delta(after, before, "epochgate_connections_total", side="client")
    assert failed == 0, "%s %s: %d logins failed" % (side, mechanism, failed)
    # Each connection logs in once, then again every < 3 s for 15 s.
    assert conns > 0 and logins >= 2 * conns, (
        "%s %s: %d logins on %d client connections in %d s with a %d ms session lifetime: "
        "no re-login" % (side, mechanism, logins, conns, SECONDS, REAUTH_MS))
    return logins, conns


def test_client_relogins_pass_through_and_the_refresher_relogs_itself(h):
    c = rk.cluster(h)
    gate = _gate(h, c, PROTOCOL, own_login=MECHANISM)
    results, before, after = _run(h, c, gate, "reauth-pass", gate_needs_sasl=True)
    logins, conns = _relogins(after, before, "passthrough", MECHANISM)
    own = after.sum("epochgate_sasl_reauthentications_total")
    assert own >= 1, "epochgate's refresher never logged itself in again"
    closed = sl.delta(after, before, "epochgate_connections_closed_total", reason="upstream_closed")
    h.note("passthrough, %s, session lifetime %d ms, %d s: %d client logins on %d connections "
           "through epochgate, none refused; the refresher re-logged itself in %d times; "
           "upstream closes %d; librdkafka latency max direct %.0f / epochgate %.0f ms" % (
               MECHANISM, REAUTH_MS, SECONDS, logins, conns, own, closed,
               results["direct"]["latency_ms"]["max"], results["gate"]["latency_ms"]["max"]))


def test_sidecar_relogs_every_session_in_before_it_ends(h):
    c = rk.cluster(h)
    gate = _gate(h, c, PROTOCOL, own_login=MECHANISM, on_behalf=True)
    results, before, after = _run(h, c, gate, "reauth-sidecar", gate_needs_sasl=False)
    logins, conns = _relogins(after, before, "on_behalf", MECHANISM)
    closed = sl.delta(after, before, "epochgate_connections_closed_total", reason="upstream_closed")
    assert closed == 0, "the brokers closed %d upstream connections (an expired session?)" % closed
    h.note("sidecar credential mode, %s, session lifetime %d ms, %d s: %d logins on behalf of "
           "%d client connections, none failed, no upstream connection closed; librdkafka "
           "latency max direct %.0f / epochgate %.0f ms" % (
               MECHANISM, REAUTH_MS, SECONDS, logins, conns,
               results["direct"]["latency_ms"]["max"], results["gate"]["latency_ms"]["max"]))


def test_oauthbearer_relogins_in_both_modes(h):
    """OAUTHBEARER (Kafka's unsecured tokens) with the same 3 s lifetime:
    librdkafka's own token passes through while epochgate's refresher logs in
    with a token file; then sidecar mode logs each session in with its token."""
    c = rk.cluster(h)
    notes = []
    for mode, on_behalf in (("passthrough", False), ("on_behalf", True)):
        gate = _oauthbearer_gate(h, c, USER if on_behalf else OWN_USER, on_behalf)
        results, before, after = _run(h, c, gate, "reauth-oauth-" + mode.replace("_", ""),
                                      gate_needs_sasl=not on_behalf, props_of=_oauthbearer_props)
        logins, conns = _relogins(after, before, mode, "OAUTHBEARER")
        assert after.sum("epochgate_sasl_authentications_total", side="own",
                         mechanism="OAUTHBEARER", result="ok") >= 2, (
            "%s: epochgate's refresher did not log in again with its token" % mode)
        if on_behalf:
            closed = sl.delta(after, before, "epochgate_connections_closed_total",
                              reason="upstream_closed")
            assert closed == 0, "the brokers closed %d upstream connections" % closed
        notes.append("%s %d logins on %d connections" % (mode, logins, conns))
        gate.stop()
    h.note("OAUTHBEARER (unsecured tokens), session lifetime %d ms, %d s each: %s; none "
           "failed; nothing lost, twice or out of order direct or through epochgate" % (
               REAUTH_MS, SECONDS, "; ".join(notes)))


if __name__ == "__main__":
    harness.main(globals())
