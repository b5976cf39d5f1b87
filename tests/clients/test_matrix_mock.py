"""The client matrix (tests/clients/matrix.py) on librdkafka's mock cluster:
every driver in clients.json through every operation, straight at the mock
cluster and through epochgate. Results: BUILD/clients/results-mock.json.

    PYTHONPATH=tests/lib /usr/bin/python3 tests/clients/test_matrix_mock.py --build-dir build
    EG_MATRIX_CLIENTS=franz-go EG_MATRIX_CELLS=metadata,produce-move ... (a subset)
"""


import matrix_test  # noqa: E402
from matrix_test import harness  # noqa: E402


def test_matrix(h):
    matrix_test.run(h, "mock")


test_matrix.timeout = 600

if __name__ == "__main__":
    harness.main(globals())
