// proxy/client/sasl_scram_cache.h: what the SCRAM client's salted-password cache
// shows outside proxy/client/sasl_scram.cc. The cache itself (a process-wide map
// from a digest of hash, password, salt and iterations to the salted
// password, wiped on eviction) lives there; this is its one observable.
#pragma once

#include <cstdint>

namespace epochgate::proxy {

/// How many times this process has run PBKDF2 for a SCRAM salted password
/// (RFC 5802 Hi()). Each (password, salt, iterations, hash) is computed
/// once and then served from the cache, as Kafka's clients do.
uint64_t scram_salted_password_runs();

}  // namespace epochgate::proxy
