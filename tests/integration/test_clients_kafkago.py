"""kafka-go (Debian's golang-github-segmentio-kafka-go-dev 0.2.1, built with
Debian's Go in GOPATH mode) as an application: a Writer with acks 1 and acks
all, a group Reader that commits every message, a leader move in the middle,
once straight at the embedded cluster and once through epochgate in the same
test, with exact counts both ways (kafka-go 0.2.1 has no idempotent
producer). And the case a user hit: a group Reader on a 200-partition topic
must not wait longer through epochgate than it does directly."""


from epochgate_testlib import clients_lib as cl  # noqa: E402
from epochgate_testlib import harness  # noqa: E402


def test_kafkago_produce_acks_1_consume_commit(h):
    cl.BothWays(h).roundtrip("kafkago", ["--acks", "1"])


def test_kafkago_produce_acks_all_consume_commit(h):
    cl.BothWays(h).roundtrip("kafkago", ["--acks", "all"])


def test_kafkago_lives_through_leader_move(h):
    cl.BothWays(h).roundtrip("kafkago", ["--acks", "all"], leader_move=True)


if __name__ == "__main__":
    harness.main(globals())
