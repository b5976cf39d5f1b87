"""epochgate wipes its secrets once used: a serving process's memory holds
no SASL password, private-key PEM text or key passphrase.

Its own file (ctest faults.secrets_in_memory) because the sanitizer pass
leaves it out: gcore of an AddressSanitizer process would dump the
sanitizer's terabytes of shadow mappings.
"""

import base64
import os
import re
import shutil
import subprocess
import time

from faults_common import harness, start_gate  # noqa: E402
from epochgate_testlib.scram_broker import ScramBroker  # noqa: E402


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out after %.0fs waiting for %s" % (timeout, what)
        time.sleep(0.05)


def test_secrets_are_not_kept_in_memory(h):
    # Once the SASL login and the TLS context are done with them, the
    # password, the private key's PEM text and its passphrase are wiped:
    # a core dump (or a read of the process's memory) taken while epochgate
    # serves holds none of them. gcore (gdb) dumps the running process.
    gcore = shutil.which("gcore")
    assert gcore, "gcore (Debian's gdb) is needed"
    marker = "pw-%s" % base64.b32encode(os.urandom(10)).decode().lower()
    broker = ScramBroker("alice", marker, iterations=4096)
    h.on_close(broker.close)
    pw = os.path.join(h.workdir, "password")
    with open(pw, "w") as f:
        f.write(marker + "\n")
    certs = os.path.join(h.workdir, "certs")
    repo = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    subprocess.run([os.path.join(repo, "tools", "tls", "make-certs.sh"), "set", certs],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, timeout=60)
    with open(os.path.join(certs, "server-key-password.txt")) as f:
        passphrase = f.read().strip()
    with open(os.path.join(certs, "server-enc.key")) as f:
        pem_lines = [l.strip() for l in f if l.strip() and not l.startswith("-----")]
    gate = start_gate(h, broker.bootstrap, extra_yaml=(
        "upstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: alice\n  password_file: %s\n"
        "tls:\n  cert_file: %s\n  key_file: %s\n  key_password_file: %s\n"
        % (pw, os.path.join(certs, "server.crt"), os.path.join(certs, "server-enc.key"),
           os.path.join(certs, "server-key-password.txt"))))
    # The refresher's own SCRAM login went through (the broker checked the
    # client proof, so the password was read and used).
    _wait(lambda: re.search(r'epochgate_sasl_authentications_total\{[^}]*result="ok"[^}]*\} [1-9]',
                            gate.metrics()), 30, "epochgate's SCRAM login")
    core = os.path.join(h.workdir, "core")
    subprocess.run([gcore, "-o", core, str(gate.proc.proc.pid)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    path = "%s.%d" % (core, gate.proc.proc.pid)
    try:
        with open(path, "rb") as f:
            memory = f.read()
    finally:
        os.unlink(path)
    # Control: what epochgate does keep (the password file's path, in its
    # config) is found, so an absent secret means wiped, not unreadable.
    assert pw.encode() in memory, "the core does not show epochgate's config"
    found = [name for name, text in [("the SASL password", marker),
                                      ("the key passphrase", passphrase)] +
             [("a line of the private key's PEM text", l) for l in pem_lines[:3]]
             if text.encode() in memory]
    assert not found, "still in epochgate's memory: %s" % ", ".join(found)
    h.note("core of %d MiB: no SASL password, key passphrase or PEM key text in it"
           % (len(memory) >> 20))



if __name__ == "__main__":
    harness.main(globals())
