// proxy/client/scram_derivation.h: runs a SCRAM salted-password derivation
// (RFC 5802 Hi(), PBKDF2) on libuv's thread pool (uv_queue_work) instead of
// the event loop, so a broker asking for 100000 iterations stalls no other
// connection on the loop. Logins on one loop that need the same salted
// password share one derivation; the number queued process-wide is bounded,
// and a login over the bound fails at once (the caller closes that one
// connection and says why) instead of queueing CPU work without end.
#pragma once

#include <uv.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "proxy/client/sasl_scram.h"

namespace epochgate::proxy {

/// One login's wait for a salted password. Owned by the login's connection;
/// all calls on the loop's thread. Destroying it before the result arrives
/// cancels the callback (the derivation still finishes and fills the cache).
class ScramDerivation {
 public:
  /// Called on the loop with the result: `salted` empty when PBKDF2 failed.
  using Done = std::function<void(std::unique_ptr<ScramSaltedPassword>)>;

  /// At most this many derivations are queued or running process-wide
  /// (logins sharing one derivation count once).
  static constexpr size_t kMaxQueued = 16;

  /// Queues `need` (its `salted` empty) on `loop`'s thread pool, or joins a
  /// derivation of the same key already queued from this loop. Returns null
  /// with `error` set when kMaxQueued derivations are already queued or
  /// libuv refuses the work; `done` is then never called.
  static std::unique_ptr<ScramDerivation> start(uv_loop_t* loop,
                                                std::unique_ptr<ScramSaltedPassword> need,
                                                Done done, std::string& error);
  ~ScramDerivation();
  ScramDerivation(const ScramDerivation&) = delete;
  ScramDerivation& operator=(const ScramDerivation&) = delete;

  /// Derivations queued or running now, process-wide.
  static size_t queued();

  struct Job;  // proxy/client/scram_derivation.cc

 private:
  ScramDerivation() = default;
  friend struct Job;
  Job* job_ = nullptr;  // null once the result was delivered
  Done done_;
};

}  // namespace epochgate::proxy
