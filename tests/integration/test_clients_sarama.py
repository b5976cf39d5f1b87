"""sarama (Debian's golang-github-shopify-sarama-dev 1.22.1, built with
Debian's Go in GOPATH mode) as an application: produces with acks 1, acks
all and idempotence, consumes through a consumer group that commits, and
lives through a leader move, once straight at the embedded cluster and once
through epochgate in the same test. Counts must match exactly both ways:
produced = acknowledged = consumed, the log holds exactly as many records
and the group's committed offsets reach every partition's end."""


from epochgate_testlib import clients_lib as cl  # noqa: E402
from epochgate_testlib import harness  # noqa: E402


def test_sarama_produce_acks_1_consume_commit(h):
    cl.BothWays(h).roundtrip("sarama", ["--acks", "1"])


def test_sarama_produce_acks_all_consume_commit(h):
    cl.BothWays(h).roundtrip("sarama", ["--acks", "all"])


def test_sarama_idempotent_produce_keeps_order(h):
    cl.BothWays(h).roundtrip("sarama", ["--acks", "all", "--idempotent"], ordered=True)


def test_sarama_lives_through_leader_move(h):
    # sarama 1.22.1 (Debian) can panic in its async producer when a leader
    # move makes it retry ("sync: negative WaitGroup counter", the family of
    # IBM/sarama issues 909 and 1652): seen straight at the mock cluster in a
    # full suite. Through epochgate the run must still pass in full.
    cl.BothWays(h).roundtrip("sarama", ["--acks", "all", "--idempotent"], ordered=True,
                             leader_move=True, known_direct_crash="negative WaitGroup counter")


if __name__ == "__main__":
    harness.main(globals())
