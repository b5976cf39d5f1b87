"""KafkaJS (npm, pure JavaScript; the version clients/build.sh pins) as an
application: produces with acks 1, acks all and idempotence, consumes
through a consumer group with auto-commit, and lives through a leader move,
once straight at the embedded cluster and once through epochgate in the
same test, with exact counts both ways: produced = acknowledged = consumed,
the log holds exactly as many records and the committed offsets reach every
partition's end.

Two things KafkaJS does not like about the embedded cluster (librdkafka's
mock) show up the same way directly and through epochgate, and the tests
say so and compare the two runs:
- the mock's LeaveGroup v3 answer lacks its members array, which KafkaJS
  logs as an error when it leaves the group;
- the mock names controller id 0, a broker that does not exist, and
  KafkaJS's idempotent producer asks the controller for its producer id.
And one thing KafkaJS does by design: it rejoins its group when a fetch
meets a moved leader, and records fetched during the rejoin are delivered
again; the tests show it happens the same way both ways."""


from epochgate_testlib import clients_lib as cl  # noqa: E402
from epochgate_testlib import harness  # noqa: E402


def test_kafkajs_produce_acks_1_consume_commit(h):
    cl.BothWays(h).roundtrip("kafkajs", ["--acks", "1"])


def test_kafkajs_produce_acks_all_consume_commit(h):
    cl.BothWays(h).roundtrip("kafkajs", ["--acks", "all"])


def test_kafkajs_idempotent_needs_a_controller_both_ways(h):
    both = cl.BothWays(h)
    both.same_failure("kafkajs", ["--acks", "all", "--idempotent"],
                      expect="Broker 0 not found in the cached metadata")
    both.cluster.cmd("controller 1")
    both.roundtrip("kafkajs", ["--acks", "all", "--idempotent"], ordered=True)


def test_kafkajs_lives_through_leader_move(h):
    both = cl.BothWays(h)
    both.cluster.cmd("controller 1")
    both.roundtrip("kafkajs", ["--acks", "all", "--idempotent", "--produce-after-rejoin"],
                   ordered=True, leader_move=True)


def test_kafkajs_redelivers_after_leader_move_both_ways(h):
    # Records written while KafkaJS rejoins (it rejoins its group when a
    # fetch meets a moved leader) are fetched under the old generation, their
    # commit fails and they come again: at-least-once, directly as through
    # epochgate. Nothing may be lost and the log must hold each record once.
    both = cl.BothWays(h)
    both.cluster.cmd("controller 1")
    both.roundtrip("kafkajs", ["--acks", "all", "--idempotent"], ordered=True, leader_move=True,
                   redelivery_on_rejoin=True)


if __name__ == "__main__":
    harness.main(globals())
