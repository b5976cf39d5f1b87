#!/usr/bin/env python3
"""tools/ctest_summary.py: runs ctest and says loudly what did not run.

ctest counts a test that exits with its SKIP_RETURN_CODE (77 here) as
"Skipped" and still exits 0, so a suite whose peers are missing looks green.
This wrapper runs ctest, collects every skipped or not-run test with its
reason, and prints them in a block at the end. With CI=true in the
environment any skip (or a required label with no test registered) fails
the run with exit 1; on a developer's machine the exit code stays ctest's.
Tests registered DISABLED are listed apart and never fail the run: that is
a decision written in CMake, not something the machine lacks.

    tools/ctest_summary.py BUILD_DIR [--require-labels a,b,...] [-- CTEST_ARGS...]

Reasons come from EPOCHGATE_SKIP_LOG, a file this wrapper creates and
passes to the tests: tests/lib/epochgate_testlib/harness.py and
tests/codec/schema_conformance_test.py append one line "SKIP name: reason"
per skipped test. Owns only that file and its own output; it must never
change what ctest runs beyond the arguments it is given.
"""

import argparse
import os
import re
import subprocess
import sys


def in_ci():
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


# "The following tests did not run:" block: "\t 12 - name (Skipped)".
NOT_RUN = re.compile(r"^\s*\d+\s+-\s+(\S+)\s+\(([^)]+)\)\s*$")


def did_not_run(output):
    """[(ctest name, why)] from ctest's "The following tests did not run" block."""
    out, inside = [], False
    for line in output.splitlines():
        if line.startswith("The following tests did not run"):
            inside = True
            continue
        if inside:
            m = NOT_RUN.match(line)
            if m:
                out.append((m.group(1), m.group(2)))
            elif line.strip():
                inside = False
    return out


def labels_without_tests(build, labels):
    """Labels of `labels` that no registered test carries."""
    empty = []
    for label in labels:
        r = subprocess.run(["ctest", "--test-dir", build, "-N", "-L", "^%s$" % re.escape(label)],
                           capture_output=True, text=True)
        m = re.search(r"Total Tests:\s*(\d+)", r.stdout)
        if not m or int(m.group(1)) == 0:
            empty.append(label)
    return empty


def main():
    argv = sys.argv[1:]
    ctest_args = []
    if "--" in argv:
        at = argv.index("--")
        argv, ctest_args = argv[:at], argv[at + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--require-labels", default="",
                    help="comma-separated ctest labels that must have tests (checked with CI=true)")
    o = ap.parse_args(argv)
    build = os.path.abspath(o.build_dir)
    skip_log = os.path.join(build, "Testing", "skipped_tests.txt")
    os.makedirs(os.path.dirname(skip_log), exist_ok=True)
    open(skip_log, "w").close()
    env = dict(os.environ, EPOCHGATE_SKIP_LOG=skip_log)

    proc = subprocess.Popen(["ctest", "--test-dir", build] + ctest_args, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            errors="replace")
    captured = []
    for line in proc.stdout:  # echoed as it comes: ctest's own progress stays visible
        sys.stdout.write(line)
        sys.stdout.flush()
        captured.append(line)
    rc = proc.wait()

    listed = did_not_run("".join(captured))
    # A test registered DISABLED is a decision written in CMake (a known
    # failure kept visible), not something the machine lacked: listed, never
    # a CI failure. Skipped and Not Run are.
    disabled = [(n, why) for n, why in listed if why == "Disabled"]
    not_run = [(n, why) for n, why in listed if why != "Disabled"]
    reasons = {}
    with open(skip_log, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("SKIP "):
                name, _, reason = line[5:].partition(": ")
                reasons.setdefault(name.split(".", 1)[0], []).append((name, reason))
    partial = sum(len(v) for v in reasons.values())
    missing_labels = labels_without_tests(build, [l for l in o.require_labels.split(",") if l])

    if not_run or partial or missing_labels:
        bar = "!" * 78
        print("\n" + bar)
        print("NOT EVERYTHING RAN: %d ctest entr%s did not run, %d test case%s skipped"
              % (len(not_run), "y" if len(not_run) == 1 else "ies", partial,
                 "" if partial == 1 else "s"))
        for name, why in not_run:
            print("  %-44s %s" % (name, why))
        for _, cases in sorted(reasons.items()):
            for case, reason in cases:
                print("    SKIP %s: %s" % (case, reason))
        for label in missing_labels:
            print("  label %-38s no test registered (configured without it?)" % label)
        print(bar)
        if in_ci():
            print("CI=true: a skipped test is a failed run (install what is missing)")
            return rc or 1
        print("(a developer run may skip; CI=true fails on any of the above)")
    else:
        print("every registered test ran (no skips)")
    if disabled:
        print("registered DISABLED in CMake (not run, by decision): %s"
              % ", ".join(n for n, _ in disabled))
    return rc


if __name__ == "__main__":
    sys.exit(main())
