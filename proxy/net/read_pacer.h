// proxy/net/read_pacer.h: fairness between connections on one event loop. A
// connection that has read a turn's worth since it last yielded (kBytesPerTurn
// bytes copied into user space, or kSplicedBytesPerTurn moved by splice(2),
// or a mix in proportion) stops
// reading (a plain socket: takes no more bytes, its poll registration kept)
// and is started again in the same loop iteration's check phase
// (uv_check_t), so the next poll serves every other ready connection before
// it reads more: a client streaming a 100 MiB frame holds the loop for about
// one turn's bytes at a time, not for the whole frame. Must never drop a
// connection's wish to read, or touch a connection after its close().
#pragma once

#include <uv.h>

#include <cstddef>
#include <vector>

namespace epochgate::proxy {

class Connection;

/// One per event loop (worker). Single-threaded: the loop's thread only.
class ReadPacer {
 public:
  /// Bytes one connection reads into user space before it yields to the
  /// rest of the loop: about 0.5 ms of copying and page faulting (epochgate
  /// copying 1 MiB records costs 0.4-0.5 s/GB of its CPU, bench/RESULTS.md).
  static constexpr size_t kBytesPerTurn = 1 << 20;
  /// Bytes one connection moves with splice(2) in a turn: about 1.2 ms at
  /// the 0.28-0.31 s/GB a spliced 1 MiB-record Produce costs. A spliced byte
  /// counts kBytesPerTurn / kSplicedBytesPerTurn of a copied one, so a 1 MiB
  /// request whose records splice no longer ends its own turn: one loop
  /// turn (an epoll_wait and the check phase) fewer per request.
  static constexpr size_t kSplicedBytesPerTurn = 4 * kBytesPerTurn;
  /// What `n` spliced bytes count towards a turn of kBytesPerTurn.
  static constexpr size_t spliced_weight(size_t n) {
    return n / (kSplicedBytesPerTurn / kBytesPerTurn);
  }

  /// Initialises the check handle on `loop`; it runs only while a connection waits.
  explicit ReadPacer(uv_loop_t* loop);
  ReadPacer(const ReadPacer&) = delete;
  ReadPacer& operator=(const ReadPacer&) = delete;

  /// `c` has stopped its reads for this turn: resume it in the check phase.
  void defer(Connection& c);
  /// `c` is closing: never resume it.
  void forget(Connection& c);
  /// Closes the check handle (the loop must run once more to finish).
  void close();
  /// Yields so far (each one a connection that gave the loop back mid-read).
  uint64_t yields() const { return yields_; }

 private:
  static void on_check(uv_check_t* h);
  uv_check_t check_;
  std::vector<Connection*> waiting_;
  uint64_t yields_ = 0;
  bool closed_ = false;
};

}  // namespace epochgate::proxy
