"""`epochgate --check-config` refuses what a start would refuse: every
certificate, key, CA bundle and credential file the config names is opened
and cross-checked, and each problem names the config file, the line of the
setting, the file and the reason. `--no-files` checks keys and values only,
for pipelines that render a config without its Secrets. Certificates come
from tools/tls/make-certs.sh (the openssl command line) at test time."""

import os
import re
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
from epochgate_testlib import harness  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def certs(h):
    d = os.path.join(h.workdir, "certs")
    os.makedirs(d, exist_ok=True)
    subprocess.run([os.path.join(ROOT, "tools", "tls", "make-certs.sh"), "set", d],
                   check=True, stdout=subprocess.DEVNULL)
    return d


def check(h, text, *flags, env=None):
    path = os.path.join(h.workdir, "cfg.yaml")
    with open(path, "w") as f:
        f.write(text)
    argv = [h.epochgate_path, "--check-config", path] + list(flags)
    r = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                       env=dict(os.environ, **(env or {})))
    return r.returncode, r.stdout + r.stderr


def expect_refused(h, text, line, pattern, **kw):
    rc, out = check(h, text, **kw)
    assert rc == 1, "exit %d, expected 1:\n%s" % (rc, out)
    assert "OK" not in out, out
    assert re.search(r"cfg\.yaml:%d:\d+: .*%s" % (line, pattern), out), \
        "no 'cfg.yaml:%d:...: %s' in:\n%s" % (line, pattern, out)
    return out


BOOT = "bootstrap_servers: [127.0.0.1:9092]\n"


def tls_block(d, cert="server.crt", key="server.key", extra=""):
    return BOOT + ("tls:\n  cert_file: %s/%s\n  key_file: %s/%s\n" % (d, cert, d, key)) + extra


def test_valid_files_are_ok(h):
    d = certs(h)
    pw = os.path.join(h.workdir, "password")
    with open(pw, "w") as f:
        f.write("s3cret\n")
    text = (tls_block(d, extra="  client_ca_file: %s/ca.crt\n  client_auth: required\n" % d) +
            "upstream_tls:\n  enabled: true\n  ca_file: %s/ca.crt\n"
            "  cert_file: %s/client.crt\n  key_file: %s/client.key\n" % (d, d, d) +
            "upstream_sasl:\n  mechanism: SCRAM-SHA-512\n  username: app\n"
            "  password_file: %s\n" % pw)
    rc, out = check(h, text)
    assert rc == 0 and "cfg.yaml: OK" in out, out


def test_missing_certificate_file(h):
    d = certs(h)
    out = expect_refused(h, tls_block(d, cert="nothere.crt"), 3,
                         r"tls\.cert_file .*nothere\.crt: cannot open: No such file")
    h.note(out.strip())


def test_key_that_does_not_match_its_certificate(h):
    d = certs(h)
    out = expect_refused(h, tls_block(d, key="client.key"), 4,
                         r"tls\.key_file .*client\.key: does not match the certificate")
    h.note(out.strip())


def test_certificate_and_key_swapped(h):
    d = certs(h)
    out = expect_refused(h, tls_block(d, cert="server.key", key="server.crt"), 3,
                         r"tls\.cert_file .*server\.key holds a private key .*swapped")
    h.note(out.strip())


def test_missing_client_ca_file(h):
    d = certs(h)
    expect_refused(h, tls_block(d, extra="  client_ca_file: %s/none.crt\n"
                                         "  client_auth: required\n" % d), 5,
                   r"tls\.client_ca_file .*none\.crt: cannot open")


def test_ca_file_that_holds_no_certificate(h):
    d = certs(h)
    text = BOOT + "upstream_tls:\n  enabled: true\n  ca_file: %s/ca.key\n" % d
    expect_refused(h, text, 4, r"upstream_tls\.ca_file .*ca\.key: no PEM certificate")


def test_upstream_client_key_mismatch(h):
    d = certs(h)
    text = (BOOT + "upstream_tls:\n  enabled: true\n  ca_file: %s/ca.crt\n"
            "  cert_file: %s/client.crt\n  key_file: %s/server.key\n" % (d, d, d))
    expect_refused(h, text, 6, r"upstream_tls\.key_file .*server\.key: does not match")


def test_missing_sasl_password_file(h):
    text = (BOOT + "upstream_sasl:\n  mechanism: PLAIN\n  username: app\n"
            "  password_file: /nonexistent/epochgate/password\n")
    out = expect_refused(h, text, 5, r"upstream_sasl\.password_file .*/nonexistent/epochgate/"
                                     r"password: cannot open: No such file")
    h.note(out.strip())


def test_empty_sasl_password_file(h):
    pw = os.path.join(h.workdir, "empty")
    open(pw, "w").close()
    text = (BOOT + "upstream_sasl:\n  mechanism: SCRAM-SHA-256\n  username: app\n"
            "  password_file: %s\n" % pw)
    expect_refused(h, text, 5, r"upstream_sasl\.password_file: the password file .* is empty")


def test_unset_sasl_password_variable(h):
    text = (BOOT + "upstream_sasl:\n  mechanism: PLAIN\n  username: app\n"
            "  password_env: EPOCHGATE_TEST_UNSET_PASSWORD\n")
    env = {k: v for k, v in os.environ.items() if k != "EPOCHGATE_TEST_UNSET_PASSWORD"}
    os.environ.pop("EPOCHGATE_TEST_UNSET_PASSWORD", None)
    expect_refused(h, text, 5, r"EPOCHGATE_TEST_UNSET_PASSWORD \(password\) is not set")
    rc, out = check(h, text, env=dict(env, EPOCHGATE_TEST_UNSET_PASSWORD="pw"))
    assert rc == 0, out


def test_missing_oauthbearer_token_file(h):
    text = (BOOT + "upstream_sasl:\n  mechanism: OAUTHBEARER\n"
            "  token_file: /nonexistent/token\n")
    expect_refused(h, text, 4, r"upstream_sasl\.token_file .*/nonexistent/token: cannot open")


def test_no_files_checks_keys_and_values_only(h):
    text = tls_block("/nonexistent") + ("upstream_sasl:\n  mechanism: PLAIN\n  username: a\n"
                                        "  password_file: /nonexistent/pw\n")
    rc, out = check(h, text, "--no-files")
    assert rc == 0 and "OK" in out and "--no-files" in out, out
    # Keys and values are still checked with --no-files.
    rc, out = check(h, text + "limits:\n  max_frame_bytez: 1\n", "--no-files")
    assert rc == 1 and re.search(r"cfg\.yaml:\d+:\d+: .*max_frame_bytez", out), out


def test_no_files_needs_check_config(h):
    r = subprocess.run([h.epochgate_path, "--no-files", "--bootstrap", "127.0.0.1:9"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--no-files goes with --check-config" in r.stderr, r


def test_start_refuses_what_check_config_refuses(h):
    """The start reads the same TLS files: a config check-config refuses for
    a certificate also fails to start (exit 1, the same reason)."""
    d = certs(h)
    text = tls_block(d, key="client.key")
    rc, out = check(h, text)
    assert rc == 1 and "does not match" in out, out
    path = os.path.join(h.workdir, "cfg.yaml")
    r = subprocess.run([h.epochgate_path, "--config", path, "--listen", "127.0.0.1:0",
                        "--no-admin"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "does not match" in r.stderr, (r.returncode, r.stderr)


if __name__ == "__main__":
    harness.main(globals())
