#!/usr/bin/python3
"""tests/ops/test_package.py: `make package` makes a tarball and a .deb that
install and run. Runs cpack on the build (as `make package` does) into a
temporary directory, then for each artifact: unpacks it into a fresh root,
runs the installed epochgate (--version, --check-config of the installed
example, a start that serves /healthz), and for the .deb checks that every
package it depends on is installable here (installed, as on the machine the
tests run on) and that its files are the program, the example and the docs.

  test_package.py --build-dir DIR
"""
import argparse
import glob
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, **kw)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def check_installed_root(root, label, failures):
    exe = os.path.join(root, "usr", "bin", "epochgate")
    if not os.access(exe, os.X_OK):
        exe = os.path.join(root, "bin", "epochgate")
    if not os.access(exe, os.X_OK):
        failures.append("%s: no bin/epochgate in %s" % (label, root))
        return
    docs = os.path.dirname(os.path.dirname(exe))
    r = run([exe, "--version"])
    if r.returncode != 0 or not r.stdout.startswith("epochgate "):
        failures.append("%s: --version: %r %r" % (label, r.stdout, r.stderr))
    example = os.path.join(docs, "share", "doc", "epochgate", "examples", "epochgate.yaml")
    r = run([exe, "--check-config", example])
    if r.returncode != 0:
        failures.append("%s: --check-config of the installed example: %s" % (label, r.stderr))
    for doc in ("LICENSE", "CHANGELOG.md", "docs/troubleshooting.md"):
        if not os.path.exists(os.path.join(docs, "share", "doc", "epochgate", doc)):
            failures.append("%s: share/doc/epochgate/%s missing" % (label, doc))
    # A start: bound, answering its admin port, stopped by SIGTERM with 0.
    admin = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        ready = os.path.join(tmp, "ready")
        p = subprocess.Popen([exe, "--bootstrap", "127.0.0.1:9", "--listen", "127.0.0.1:0",
                              "--admin", "127.0.0.1:%d" % admin, "--ready-file", ready],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while not os.path.exists(ready) and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.05)
            if not os.path.exists(ready):
                failures.append("%s: the installed epochgate wrote no ready file" % label)
                return
            with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % admin, timeout=5) as h:
                if h.status != 200:
                    failures.append("%s: /healthz %d" % (label, h.status))
        finally:
            p.terminate()
            rc = p.wait(timeout=60)
        if rc != 0:
            failures.append("%s: exit %d after SIGTERM: %s" % (label, rc, p.stderr.read()[-500:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    o = ap.parse_args()
    failures = []
    with tempfile.TemporaryDirectory() as out:
        r = run(["cpack", "--config", os.path.join(o.build_dir, "CPackConfig.cmake"), "-B", out])
        if r.returncode != 0:
            print("FAIL cpack: %s %s" % (r.stdout[-2000:], r.stderr[-2000:]))
            return 1
        tarballs = glob.glob(os.path.join(out, "epochgate-*.tar.gz"))
        debs = glob.glob(os.path.join(out, "epochgate_*.deb"))
        if len(tarballs) != 1 or len(debs) != 1:
            print("FAIL cpack made %s" % sorted(os.listdir(out)))
            return 1
        with tempfile.TemporaryDirectory() as root:
            run(["tar", "-xzf", tarballs[0], "-C", root, "--strip-components=1"], check=True)
            check_installed_root(root, os.path.basename(tarballs[0]), failures)
        info = run(["dpkg-deb", "--field", debs[0], "Package", "Version", "Depends"]).stdout
        depends = re.search(r"^Depends: (.*)$", info, re.M)
        if not depends:
            failures.append("%s: no Depends field:\n%s" % (debs[0], info))
        else:
            for dep in depends.group(1).split(","):
                name = dep.strip().split(" ")[0]
                s = run(["dpkg-query", "-W", "-f=${Status}", name])
                if "install ok installed" not in s.stdout:
                    failures.append("%s: depends on %s, not installed here" % (debs[0], name))
        with tempfile.TemporaryDirectory() as root:
            run(["dpkg-deb", "-x", debs[0], root], check=True)
            check_installed_root(root, os.path.basename(debs[0]), failures)
        names = [os.path.basename(p) for p in tarballs + debs]
    for f in failures:
        print("FAIL " + f)
    print("package: %s; %d failures" % (", ".join(names), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
