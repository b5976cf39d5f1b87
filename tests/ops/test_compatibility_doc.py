#!/usr/bin/python3
"""docs/compatibility.md is generated: it must equal what
tools/clients/gen_compatibility.py renders from the committed results
(tests/clients/results/*.json) and tests/clients/differences.json, so the
page can only change with the results it shows. Also: each client row of
the results names the version tests/clients/clients.json pins, and every
difference between direct and through epochgate in the committed results
is explained.

  test_compatibility_doc.py --repo DIR
"""
import argparse
import json
import os
import sys

from epochgate_testlib import load_tool


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repo", required=True)
    repo = os.path.abspath(ap.parse_args().repo)
    gen = load_tool("tools/clients/gen_compatibility.py")
    failures = []
    results = gen.load_results()
    differences = gen.load_differences()
    if "realkafka" not in results:
        failures.append("tests/clients/results/realkafka.json is missing")
    with open(gen.PAGE) as f:
        if f.read() != gen.render(results, differences):
            failures.append("docs/compatibility.md is not the render of tests/clients/results "
                            "(run tools/clients/gen_compatibility.py; never edit the page)")
    with open(os.path.join(repo, "tests", "clients", "clients.json")) as f:
        pinned = {c["name"]: c["version"] for c in json.load(f)["clients"]}
    for cluster, res in results.items():
        known = {(d["client"], d["cell"]) for d in differences if d["cluster"] in (cluster, "all")}
        for c in res["clients"]:
            if pinned.get(c["name"]) != c["version"]:
                failures.append("%s results: %s %s, clients.json pins %s" % (
                    cluster, c["name"], c["version"], pinned.get(c["name"])))
        for r in res["results"]:
            if r["direct"]["status"] != r["epochgate"]["status"] and (r["client"], r["cell"]) not in known:
                failures.append("%s results: %s %s differs (direct %s, epochgate %s) without an explanation "
                                "in tests/clients/differences.json" % (
                                    cluster, r["client"], r["cell"], r["direct"]["status"], r["epochgate"]["status"]))
    for f in failures:
        print("FAIL " + f)
    print("compatibility doc: %d cluster results, %d failures" % (len(results), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
