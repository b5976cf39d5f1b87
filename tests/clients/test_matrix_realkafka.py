"""The client matrix (tests/clients/matrix.py) on a real Apache Kafka 4.4.0
cluster: every driver in clients.json through every operation, straight at
the cluster and through epochgate in the same run. Results:
BUILD/clients/results-realkafka.json; docs/compatibility.md rendered from
them into BUILD/clients/ must give every cell the status the committed
results (tests/clients/results/realkafka.json) give it.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/clients/test_matrix_realkafka.py --build-dir build
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
from epochgate_testlib import load_tool  # noqa: E402

gen_compatibility = load_tool("tools/clients/gen_compatibility.py")
import matrix_test  # noqa: E402
from matrix_test import harness  # noqa: E402


def test_matrix(h):
    results = matrix_test.run(h, "realkafka")
    if os.environ.get("EG_MATRIX_CLIENTS") or os.environ.get("EG_MATRIX_CELLS"):
        return  # a subset: nothing to compare with the committed table
    with open(os.path.join(HERE, "results", "realkafka.json")) as f:
        committed = json.load(f)
    out = os.path.join(h.build_dir, "clients", "compatibility.md")
    gen_compatibility.write(out, {"realkafka": results})
    diff = gen_compatibility.status_differences(committed, results)
    assert not diff, ("statuses differ from the committed results (re-run and commit "
                      "tools/clients/gen_compatibility.py --update if intended):\n  " + "\n  ".join(diff))


test_matrix.timeout = 1100

if __name__ == "__main__":
    harness.main(globals())
