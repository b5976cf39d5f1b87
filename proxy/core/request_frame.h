// proxy/core/request_frame.h: one client request frame with the facts read
// from it once, when it arrives (docs/architecture.md section 9): its header,
// its API table row, whether the policy decides on it, what a Produce's acks
// and a Produce or Fetch's own wait say, and the version it goes upstream at
// (the KIP-951 bridge). The session's request path fills it; the fencing
// hooks and the reroute plan read it instead of parsing the frame again.
// Plain data; never owns the frame's bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codec/api_table.h"
#include "codec/header.h"

namespace epochgate::proxy {

/// A request frame and what the request path read from it.
struct RequestFrame {
  /// The payload after the 4-byte size prefix, which precedes it in the
  /// same buffer; mutable so the bridged version can be written in place.
  uint8_t* data = nullptr;
  size_t size = 0;
  /// Api key, version and correlation id always; client id, tagged fields
  /// and `header.size` only when `header_parsed`.
  codec::RequestHeader header;
  /// The whole header was parsed: Produce and Fetch (their bodies are
  /// peeked), the versions the policy decides, SaslHandshake.
  bool header_parsed = false;
  /// The API table's row for the key; null for a key outside the table.
  const codec::ApiInfo* info = nullptr;
  /// The policy decides on this key and version, and fencing is wired.
  bool decided = false;
  /// False for an acks=0 Produce: the broker sends no answer, epochgate none either.
  bool expects_response = true;
  /// The wait the request grants its broker, in ms (Produce timeout_ms,
  /// Fetch max_wait_ms; 0 for other APIs); -1 for long polls it does not
  /// bound (JoinGroup, SyncGroup, ShareFetch), which are not watched.
  int32_t own_wait_ms = 0;
  /// The version sent upstream: the client's, or the one below it when the
  /// KIP-951 bridge downgrades (Produce v10 as v9, Fetch v16 as v15).
  int16_t upstream_version = 0;

  int16_t api_key() const { return header.api_key; }
  int16_t api_version() const { return header.api_version; }
  int32_t correlation_id() const { return header.correlation_id; }
  /// The body after the header; valid only when `header_parsed`.
  const uint8_t* body() const { return data + header.size; }
  size_t body_size() const { return size - header.size; }
  /// True when the KIP-951 bridge sends this request at a lower version.
  bool bridged() const { return upstream_version != header.api_version; }
};

}  // namespace epochgate::proxy
