"""A SASL-authenticating mock cluster for the tests of clients' SASL
through epochgate: tools/sasl_gate/sasl_gate.py stands in front of each
mock broker (the mock advertises the gate's ports) and authenticates as a
Kafka broker's SASL listener does, logging each login's framing. Used by
tests/integration (passthrough, sidecar mode, refresher login) and
tests/scenario (reroute safety)."""

import json
import os
import uuid

from . import harness
from . import ROOT

GATE = os.path.join(ROOT, "tools", "sasl_gate", "sasl_gate.py")
USER, PASSWORD = "alice", "alice-secret"


class SaslCluster:
    """A 3-broker mock cluster behind one SASL gate listener per broker."""

    def __init__(self, h, topics, lifetime_ms=0):
        self.cluster = h.start_cluster(3, topics)
        self.events_path = os.path.join(h.workdir, "gate-events-%s.jsonl" % uuid.uuid4().hex[:6])
        argv = [harness.TEST_PYTHON, GATE, "--user", "%s:%s" % (USER, PASSWORD),
                "--events", self.events_path, "--session-lifetime-ms", str(lifetime_ms)]
        for host, port in self.cluster.addresses:
            argv += ["--upstream", "%s:%d" % (host, port)]
        self.proc = harness.Process("sasl_gate", argv, h.workdir)
        h._processes.append(self)  # stopped, and its log shown, by the harness
        line = self.proc.read_line(timeout=15)
        assert line.startswith("GATE "), "sasl gate said %r" % line
        self.bootstrap = line.split(" ", 1)[1]
        for broker_id, address in enumerate(self.bootstrap.split(","), start=1):
            host, port = harness.parse_hostport(address)
            self.cluster.cmd("advertise %d %s %d" % (broker_id, host, port))

    def stop(self):
        return self.proc.stop()

    def events(self, since=0):
        if not os.path.exists(self.events_path):
            return []
        with open(self.events_path) as f:
            return [json.loads(line) for line in f][since:]


def sasl_args(mechanism, password=PASSWORD):
    args = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mechanism]
    if mechanism == "OAUTHBEARER":
        return args + ["-X", "sasl.oauthbearer.config=principal=" + USER,
                       "-X", "enable.sasl.oauthbearer.unsecure.jwt=true"]
    return args + ["-X", "sasl.username=" + USER, "-X", "sasl.password=" + password]


def logins(events, framing=None):
    return [e for e in events if e.get("event") == "auth" and e.get("result") == "ok"
            and (framing is None or e["framing"] == framing)]
