"""What the client-matrix tests assert, shared by test_matrix_realkafka.py
and test_matrix_mock.py: the matrix ran (every client's program there, or
with CI=true a failure), through epochgate each cell has the status it has
straight at the cluster (or the difference is explained in
differences.json with the client's own behaviour as the reason), metadata
and admin answers through epochgate name only epochgate's addresses, and a
leader move through epochgate loses, duplicates and reorders nothing.
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
import clusters  # noqa: E402
import matrix  # noqa: E402
from clusters import harness  # noqa: E402

DIFFERENCES = os.path.join(HERE, "differences.json")


def explained(cluster):
    """{(client, cell): reason} of the known differences on `cluster`."""
    with open(DIFFERENCES) as f:
        return {(d["client"], d["cell"]): d["reason"] for d in json.load(f)["differences"]
                if d["cluster"] in (cluster, "all")}


def run(h, kind):
    reg = matrix.load_registry()
    only = [c for c in os.environ.get("EG_MATRIX_CLIENTS", "").split(",") if c]
    cells = [c for c in os.environ.get("EG_MATRIX_CELLS", "").split(",") if c]
    missing = matrix.missing_clients(reg)
    for name, why in sorted(missing.items()):
        if not only or name in only:
            harness.record_skip("clients.%s.%s" % (kind, name), why)
    if missing and harness.in_ci():
        raise AssertionError("CI=true: every client must run; missing %s" % missing)
    if len(missing) == len(reg["clients"]):
        raise harness.Skip("no client driver built: %s" % missing)
    cluster = clusters.RealCluster(h) if kind == "realkafka" else clusters.MockCluster(h)
    m = matrix.Matrix(h, cluster, reg, os.path.join(h.workdir, "runs"), clients=only, cells=cells)
    results = m.run(missing)
    out = os.path.join(h.build_dir, "clients", "results-%s.json" % cluster.name)
    matrix.write_results(results, out)
    h.note("matrix on %s: %d rows in %.1fs, results in %s, a row per cell as it ended in %s" % (
        cluster.name, len(results["results"]), results["seconds"], out, m.progress_path))
    check(results, explained(cluster.name))
    return results


def check(results, known):
    problems = []
    for r in results["results"]:
        d, g = r["direct"], r["epochgate"]
        key = (r["client"], r["cell"])
        if d["status"] == "not-run":
            continue
        # epochgate must never be worse than the cluster itself: a cell the
        # client passes straight at the cluster must pass through epochgate.
        # The reverse (the client failing straight at the cluster, e.g. a
        # consumer that never got its assignment in time) is the client's
        # own behaviour in that run, shown in the page, not a proxy fault.
        if d["status"] == "ok" and g["status"] != "ok" and key not in known:
            problems.append("%s %s: direct %s, through epochgate %s (%s)" % (
                r["client"], r["cell"], d["status"], g["status"], g.get("error") or d.get("error")))
        elif d["status"] != g["status"] and g["status"] != "ok" and key not in known:
            problems.append("%s %s: direct %s, through epochgate %s (%s)" % (
                r["client"], r["cell"], d["status"], g["status"], g.get("error") or d.get("error")))
        if g.get("foreign_addresses"):
            problems.append("%s %s: through epochgate the client learned upstream ports %s" % (
                r["client"], r["cell"], g["foreign_addresses"]))
        v = g.get("verify")
        if v is not None and not matrix.verify.clean(v) and key not in known:
            problems.append("%s %s through epochgate: %s" % (r["client"], r["cell"], v))
    assert not problems, "client matrix:\n  " + "\n  ".join(problems)
