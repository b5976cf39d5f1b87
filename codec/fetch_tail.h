// codec/fetch_tail.h: re-encodes the top-level tagged fields of a streamed
// Fetch response (v12+; NodeEndpoints is tag 0 from v16) at exactly the
// length the broker sent, because the size prefix reached the client before
// them. A shorter result is padded with one tagged field no Fetch version
// defines (KIP-482: a reader skips tags it does not know); NodeEndpoints
// entries that do not fit are left out from the end (the partitions'
// CurrentLeader ids and epochs stay, and a client finds a node's address
// through Metadata). Pure encoding: no I/O, no address lookups.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "codec/messages/fetch_response.h"
#include "codec/types.h"

namespace epochgate::proxy {

/// The re-encoded section and what fitting it cost.
struct FetchTailFit {
  std::vector<uint8_t> bytes;  ///< exactly the requested size when `ok`
  size_t dropped = 0;          ///< NodeEndpoints entries left out
  bool padded = false;         ///< an unknown tagged field fills the rest
  bool ok = false;             ///< false: no encoding has that size (never for a real tail)
};

/// Encodes `endpoints` (already rewritten to epochgate's addresses; absent
/// when nullopt) as tag 0, then `others` (the broker's other top-level
/// tagged fields, tags ascending, none 0), into exactly `size` bytes at
/// Fetch `version` (16+ when `endpoints` is set).
FetchTailFit fit_fetch_tail(const std::optional<std::vector<codec::FetchResponse::NodeEndpoint>>& endpoints,
                            const codec::TaggedFields& others, int16_t version, size_t size);

}  // namespace epochgate::proxy
