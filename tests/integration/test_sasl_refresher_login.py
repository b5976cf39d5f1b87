"""epochgate's own SASL login (`upstream_sasl`): against a cluster whose every
listener requires SASL (tools/sasl_gate/ in front of the embedded cluster),
the refresher logs in before its Metadata requests, so the view loads and
/readyz turns 200 with no client traffic at all; it logs in again on the
same connection before the broker's session lifetime runs out (KIP-368); a
refused login is a log line naming the mechanism, the broker and the
broker's own message, a metric, and readiness stays false; a rotated
password file or token file is used by the next login. The gate's event log
is the independent record of who logged in, how, and when."""

import json
import os
import re
import time

from epochgate_testlib import harness  # noqa: E402
from epochgate_testlib import prom_text  # noqa: E402
from sasl_client import unsecured_jws  # noqa: E402
from epochgate_testlib.sasl_cluster import SaslCluster, logins  # noqa: E402

USER, PASSWORD = "alice", "alice-secret"


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def start_with_config(h, sc, yaml_text):
    path = os.path.join(h.workdir, "epochgate.yaml")
    write(path, yaml_text)
    return h.start_gate(sc.bootstrap, ["--config", path])


def ready(gate):
    return gate.http_get("/readyz")[0] == 200


def metric(gate, name, **labels):
    return prom_text.metric(gate.metrics(), name, **labels)


def own_logins(sc, since=0):
    return [e for e in logins(sc.events(since)) if e["framing"].startswith("SaslAuthenticate")]


def test_scram_login_loads_the_view_and_reauthenticates(h):
    sc = SaslCluster(h, ["orders:3:3"], lifetime_ms=1500)
    pw = os.path.join(h.workdir, "password")
    write(pw, PASSWORD + "\n")
    gate = start_with_config(h, sc, (
        "upstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: %s\n  password_file: %s\n"
        "refresher:\n  interval_ms: 500\n") % (USER, pw))
    harness.wait_until(lambda: ready(gate), 15, what="/readyz 200 after the refresher's login")
    # The startup refresh asks for brokers only (topics are learned from
    # traffic): the view's nodes are the gate's listeners, as the cluster says.
    status, body = gate.http_get("/debug/metadata")
    nodes = {n["node_id"]: n["upstream_port"] for n in json.loads(body)["nodes"]}
    gate_ports = [harness.parse_hostport(a)[1] for a in sc.bootstrap.split(",")]
    assert nodes == {1: gate_ports[0], 2: gate_ports[1], 3: gate_ports[2]}, (nodes, gate_ports)
    first = own_logins(sc)
    assert first and first[0]["mechanism"] == "SCRAM-SHA-512" and first[0]["principal"] == USER, \
        first
    # Three lifetimes: each Metadata refresh after 85 % of the lifetime logs in again first.
    harness.wait_until(lambda: metric(gate, "epochgate_sasl_reauthentications_total") >= 2, 15,
                       what="two re-authentications")
    again = [e for e in own_logins(sc) if e["reauthentication"]]
    assert again, "the gate saw no re-authentication on a live connection"
    expired = [e for e in sc.events() if e.get("event") == "session_expired"]
    assert not expired, "a request arrived after the session ended: %s" % expired[:2]
    assert ready(gate)
    ok = metric(gate, "epochgate_sasl_authentications_total", side="own",
                mechanism="SCRAM-SHA-512", result="ok")
    assert ok >= 3, ok
    with open(gate.proc.log_path, errors="replace") as f:
        assert PASSWORD not in f.read(), "the password reached epochgate's log"
    status, body = gate.http_get("/debug/config")
    cfg = json.loads(body)["upstream_sasl"]
    assert PASSWORD not in body and cfg["mechanism"] == "SCRAM-SHA-512", cfg


def test_refused_login_keeps_readiness_false_until_the_password_file_is_fixed(h):
    sc = SaslCluster(h, ["orders:1:3"])
    pw = os.path.join(h.workdir, "password")
    write(pw, "not-the-password\n")
    gate = start_with_config(h, sc, (
        "upstream_sasl:\n  mechanism: SCRAM-SHA-256\n  username: %s\n  password_file: %s\n") % (
        USER, pw))
    harness.wait_until(lambda: metric(gate, "epochgate_sasl_authentications_total", side="own",
                                      mechanism="SCRAM-SHA-256", result="failed") >= 2, 15,
                       what="two refused logins counted")
    assert not ready(gate), "/readyz is 200 without a loaded view"
    with open(gate.proc.log_path, errors="replace") as f:
        log = f.read()
    wanted = ("SASL login (SCRAM-SHA-256) to 127.0.0.1:%d failed: Authentication failed during "
              "authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256"
              % harness.parse_hostport(sc.bootstrap.split(",")[0])[1])
    assert wanted in log, "no log line naming mechanism, broker and the broker's message"
    assert "not-the-password" not in log, "the password reached the log"
    write(pw, PASSWORD + "\n")  # a rotated Secret
    harness.wait_until(lambda: ready(gate), 15, what="/readyz 200 after the password file changed")
    assert own_logins(sc), "the gate saw no successful login"


def test_oauthbearer_token_file_is_read_again_at_each_login(h):
    sc = SaslCluster(h, ["orders:1:3"])
    token = os.path.join(h.workdir, "token")
    write(token, unsecured_jws(USER, lifetime_s=-60) + "\n")  # expired
    gate = start_with_config(h, sc, (
        "upstream_sasl:\n  mechanism: OAUTHBEARER\n  token_file: %s\n") % token)
    harness.wait_until(lambda: metric(gate, "epochgate_sasl_authentications_total", side="own",
                                      mechanism="OAUTHBEARER", result="failed") >= 1, 15,
                       what="the expired token refused")
    assert not ready(gate)
    write(token, unsecured_jws(USER, lifetime_s=3600) + "\n")
    harness.wait_until(lambda: ready(gate), 15, what="/readyz 200 with the new token")
    assert [e for e in own_logins(sc) if e["mechanism"] == "OAUTHBEARER"]


def test_plain_password_from_the_environment(h):
    sc = SaslCluster(h, ["orders:1:3"])
    os.environ["EPOCHGATE_TEST_SASL_PASSWORD"] = PASSWORD  # inherited by epochgate
    try:
        gate = start_with_config(h, sc, (
            "upstream_sasl:\n  mechanism: PLAIN\n  username: %s\n"
            "  password_env: EPOCHGATE_TEST_SASL_PASSWORD\n") % USER)
    finally:
        del os.environ["EPOCHGATE_TEST_SASL_PASSWORD"]
    harness.wait_until(lambda: ready(gate), 15, what="/readyz 200 after a PLAIN login")
    assert [e for e in own_logins(sc) if e["mechanism"] == "PLAIN"]


def test_a_sasl_cluster_without_upstream_sasl_is_named_in_the_warning(h):
    # The gate answers epochgate's ApiVersions and closes the connection at
    # its Metadata request, as a Kafka broker requiring SASL does: the
    # warning says so and names the key to set, instead of calling the
    # brokers unreachable.
    sc = SaslCluster(h, ["orders:1:3"])
    gate = h.start_gate(sc.bootstrap, [])
    wanted = "then closed the connection at epochgate's Metadata request, as brokers that " \
             "require SASL may: set upstream_sasl"

    def warned():
        with open(gate.proc.log_path, errors="replace") as f:
            return any(wanted in line and " warn " in line for line in f)
    harness.wait_until(warned, 15, what="the warning naming upstream_sasl")
    assert not ready(gate), "/readyz is 200 without a loaded view"
    # /readyz says why, and the failed rounds are counted by reason.
    status, body = gate.http_get("/readyz")
    assert status == 503 and "require SASL may: set upstream_sasl" in body, (status, body)
    assert metric(gate, "epochgate_metadata_refresh_errors_total",
                  reason="closed_at_metadata") >= 1
    # Retries back off: a few rounds in the first seconds, not one a second.
    time.sleep(6)
    with open(gate.proc.log_path, errors="replace") as f:
        warnings = [line for line in f if wanted in line]
    assert 2 <= len(warnings) <= 4, "%d warnings in ~8 s: %s" % (len(warnings), warnings)
    assert re.search(r"retrying in (2000|4000|8000) ms", warnings[-1]), warnings[-1]
    refused = [e for e in sc.events() if e.get("event") == "closed"]
    assert refused, "the gate saw no connection it closed"


if __name__ == "__main__":
    harness.main(globals())
