// codec/request_peek.h: the few request facts the session needs without a
// full decode. Reads only the bytes it needs; bounds-checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace epochgate::proxy {

/// Acks of a Produce request body (after the header) of `version`:
/// v0-2 start with Acks; v3+ have TransactionalId first (compact from v9).
/// nullopt if the body is too short or malformed.
std::optional<int16_t> produce_acks(const uint8_t* body, size_t len, int16_t version);

/// The wait a request body (after the header) of `key`/`version` allows its
/// broker, in ms: Produce timeout_ms, Fetch max_wait_ms (the first field from
/// v15, after ReplicaId before; FetchRequest.json). 0 for other APIs.
/// nullopt if the body is too short.
std::optional<int32_t> request_own_wait_ms(int16_t key, const uint8_t* body, size_t len,
                                           int16_t version);

}  // namespace epochgate::proxy
