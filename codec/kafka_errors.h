// codec/kafka_errors.h: the Kafka error codes epochgate answers with, reacts
// to or writes itself, declared once (codes and names as in Kafka's protocol
// error table; docs/architecture.md section 4). An unscoped enum over
// int16_t, so a value compares with and assigns to the wire's ErrorCode
// fields as it is.
#pragma once

#include <cstdint>

namespace epochgate::codec {

/// Kafka ErrorCode values (int16 on the wire) that epochgate names in code.
enum KafkaError : int16_t {
  kErrNone = 0,
  kErrUnknownTopicOrPartition = 3,   ///< broker does not host the partition (refresh)
  kErrLeaderNotAvailable = 5,        ///< election in progress (refresh)
  kErrNotLeaderOrFollower = 6,       ///< not the leader / not a replica (refresh)
  kErrCoordinatorNotAvailable = 15,  ///< coordinator unknown; the client looks again
  kErrIllegalSaslState = 34,         ///< a SASL request out of the expected order
  kErrOutOfOrderSequenceNumber = 45, ///< Produce past a gap in its producer's sequence: not stored
  kErrFencedLeaderEpoch = 74,        ///< request's leader epoch older than the broker's
  kErrUnknownLeaderEpoch = 75,       ///< request's leader epoch newer than the broker's
  kErrUnknownTopicId = 100,          ///< broker does not know the topic id (refresh)
};

}  // namespace epochgate::codec
