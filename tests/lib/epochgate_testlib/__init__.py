"""epochgate_testlib: the helpers epochgate's Python tests share, one package
imported by name (`from epochgate_testlib import harness`), never copied and
never reached by a path a test file inserts.

ctest puts tests/lib on PYTHONPATH for every test (tests/CMakeLists.txt); by
hand: `PYTHONPATH=tests/lib /usr/bin/python3 tests/integration/test_kcat.py
--build-dir build`.

  harness        processes, the embedded mock cluster, epochgate, skips
  kafka_wire     our own Kafka frame encoder and decoder (raw-wire tests)
  prom_text      reading a Prometheus exposition
  tcp_relay      a plain TCP relay; fault_relay: one that misbehaves on cue
  clients_lib    the client ecosystems (KafkaJS, sarama, kafka-go) as peers
  client_churn   clients that come and go (faults.client_churn, the soak)
  scenario_lib   leader moves and checks the fencing scenarios share;
  scenario_wire  their raw frames
  tls_lib        certificates, TLS configs and peers for the TLS tests
  realkafka_lib  a real Kafka cluster (KRaft) for the realkafka tests
  old_consumer   Debian's kafka-python as an old consumer across leader moves
  sasl_cluster   a SASL-authenticating mock cluster
  scram_broker, loopback_listener   scripted brokers for the fault tests

Paths the helpers need are named from the repository root (ROOT), never
from a helper's own folder. Standard library only at import time.
"""
import importlib.util
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TESTS = os.path.join(ROOT, "tests")


def test_area(name):
    """The folder of one test area, e.g. test_area("integration")."""
    return os.path.join(TESTS, name)


def load_tool(relpath):
    """The module tools/... at `relpath` under ROOT (e.g. "tools/tls/tls_rig.py"),
    loaded once under its file name, so tests use the tool itself rather than
    a copy, without putting the tools folder on sys.path."""
    name = os.path.splitext(os.path.basename(relpath))[0]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
