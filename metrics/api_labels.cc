// metrics/api_labels.cc: API key -> label value table. Names are facts of the
// Kafka protocol (the request names, snake_cased); the table is fixed so the
// label set stays bounded whatever clients send.
#include "metrics/api_labels.h"

namespace epochgate::metrics {
namespace {

constexpr const char* kApiNames[kApiLabelCount] = {
    "produce",                                    // 0
    "fetch",                                      // 1
    "list_offsets",                               // 2
    "metadata",                                   // 3
    "leader_and_isr",                             // 4
    "stop_replica",                               // 5
    "update_metadata",                            // 6
    "controlled_shutdown",                        // 7
    "offset_commit",                              // 8
    "offset_fetch",                               // 9
    "find_coordinator",                           // 10
    "join_group",                                 // 11
    "heartbeat",                                  // 12
    "leave_group",                                // 13
    "sync_group",                                 // 14
    "describe_groups",                            // 15
    "list_groups",                                // 16
    "sasl_handshake",                             // 17
    "api_versions",                               // 18
    "create_topics",                              // 19
    "delete_topics",                              // 20
    "delete_records",                             // 21
    "init_producer_id",                           // 22
    "offset_for_leader_epoch",                    // 23
    "add_partitions_to_txn",                      // 24
    "add_offsets_to_txn",                         // 25
    "end_txn",                                    // 26
    "write_txn_markers",                          // 27
    "txn_offset_commit",                          // 28
    "describe_acls",                              // 29
    "create_acls",                                // 30
    "delete_acls",                                // 31
    "describe_configs",                           // 32
    "alter_configs",                              // 33
    "alter_replica_log_dirs",                     // 34
    "describe_log_dirs",                          // 35
    "sasl_authenticate",                          // 36
    "create_partitions",                          // 37
    "create_delegation_token",                    // 38
    "renew_delegation_token",                     // 39
    "expire_delegation_token",                    // 40
    "describe_delegation_token",                  // 41
    "delete_groups",                              // 42
    "elect_leaders",                              // 43
    "incremental_alter_configs",                  // 44
    "alter_partition_reassignments",              // 45
    "list_partition_reassignments",               // 46
    "offset_delete",                              // 47
    "describe_client_quotas",                     // 48
    "alter_client_quotas",                        // 49
    "describe_user_scram_credentials",            // 50
    "alter_user_scram_credentials",               // 51
    "vote",                                       // 52
    "begin_quorum_epoch",                         // 53
    "end_quorum_epoch",                           // 54
    "describe_quorum",                            // 55
    "alter_partition",                            // 56
    "update_features",                            // 57
    "envelope",                                   // 58
    "fetch_snapshot",                             // 59
    "describe_cluster",                           // 60
    "describe_producers",                         // 61
    "broker_registration",                        // 62
    "broker_heartbeat",                           // 63
    "unregister_broker",                          // 64
    "describe_transactions",                      // 65
    "list_transactions",                          // 66
    "allocate_producer_ids",                      // 67
    "consumer_group_heartbeat",                   // 68
    "consumer_group_describe",                    // 69
    "controller_registration",                    // 70
    "get_telemetry_subscriptions",                // 71
    "push_telemetry",                             // 72
    "assign_replicas_to_dirs",                    // 73
    "list_config_resources",                      // 74
    "describe_topic_partitions",                  // 75
    "share_group_heartbeat",                      // 76
    "share_group_describe",                       // 77
    "share_fetch",                                // 78
    "share_acknowledge",                          // 79
    "add_raft_voter",                             // 80
    "remove_raft_voter",                          // 81
    "update_raft_voter",                          // 82
    "initialize_share_group_state",               // 83
    "read_share_group_state",                     // 84
    "write_share_group_state",                    // 85
    "delete_share_group_state",                   // 86
    "read_share_group_state_summary",             // 87
    "streams_group_heartbeat",                    // 88
    "streams_group_describe",                     // 89
    "describe_share_group_offsets",               // 90
    "alter_share_group_offsets",                  // 91
    "delete_share_group_offsets",                 // 92
    "streams_group_topology_description_update",  // 93
    "unregister_controller",                      // 94
};

}  // namespace

const char* api_label(int16_t api_key) {
  const int slot = api_slot(api_key);
  return slot == kApiLabelCount ? "unknown" : kApiNames[slot];
}

}  // namespace epochgate::metrics
