// proxy/app/acceptor.h: accepts client connections on every listening socket
// (bootstrap and one per broker node) from one loop, and hands each accepted
// descriptor to a worker. One descriptor per listener, whatever the number of
// workers: a socket dup'ed into every worker loop cost 1 + workers
// descriptors per broker node, and SO_REUSEPORT groups cost workers
// descriptors per node too. The hand-off costs one cross-thread wake-up per
// new connection, which Kafka's long-lived connections make negligible.
// When accept fails for lack of descriptors (EMFILE, ENFILE, ENOBUFS,
// ENOMEM), or an accepted descriptor eats into the reserve kept for the
// admin server (probes), the refresher and the upstream dials of clients
// already accepted, the event is counted and logged (rate-limited) and
// accepting pauses with backoff instead of spinning on a readable listener;
// clients wait in the kernel backlog meanwhile instead of being accepted and
// closed, and are served once descriptors free.
// Runs on one loop's thread; never reads or writes client bytes.
#pragma once

#include <uv.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string_view>

namespace epochgate::proxy {

/// Accepts on listening descriptors it owns (it closes them).
class Acceptor {
 public:
  /// Receives each accepted, non-blocking descriptor (ownership passes).
  using HandOff = std::function<void(int32_t node_id, int fd)>;
  /// Called for each accept failure with its reason ("emfile", "enfile",
  /// "enobufs", "enomem", "fd_reserve", "other").
  using OnError = std::function<void(std::string_view reason)>;

  struct Options {
    uint32_t backoff_initial_ms = 10;   ///< first pause after a descriptor shortage
    uint32_t backoff_max_ms = 1000;     ///< doubling stops here
    uint32_t batch = 64;                ///< accepts per readable event per listener
    /// Descriptors below the soft RLIMIT_NOFILE that client accepts leave
    /// free (0: none kept). Linux hands out the lowest free number, so an
    /// accepted descriptor numbered limit - reserve or more means fewer than
    /// `fd_reserve` are left.
    uint32_t fd_reserve = 0;
    /// Descriptors in use or committed (accepted clients whose upstream dial
    /// is still to come), as the owner counts them; checked against the
    /// reserve besides the lowest-free estimate, which holes left by closed
    /// connections make too low. Called on the loop's thread.
    std::function<uint64_t()> descriptors_committed;
  };

  Acceptor(uv_loop_t* loop, HandOff hand_off, OnError on_error, Options options);
  Acceptor(uv_loop_t* loop, HandOff hand_off, OnError on_error)
      : Acceptor(loop, std::move(hand_off), std::move(on_error), Options{}) {}
  ~Acceptor();
  Acceptor(const Acceptor&) = delete;
  Acceptor& operator=(const Acceptor&) = delete;

  /// Starts accepting on `fd` (listening, non-blocking) for `node_id`;
  /// replaces (and closes) a previous listener of that node.
  void add(int32_t node_id, int fd);
  /// Stops accepting for `node_id` and closes its descriptor.
  void remove(int32_t node_id);
  /// Stops and closes every listener (drain, shutdown). Idempotent.
  void close_all();

  /// Listeners accepted on.
  size_t size() const { return listeners_.size(); }
  /// True while a descriptor shortage pauses accepting.
  bool backing_off() const { return paused_; }

 private:
  struct Listener {
    uv_poll_t poll;
    int fd = -1;
    int32_t node_id = 0;
    Acceptor* owner = nullptr;
  };
  static void on_readable(uv_poll_t* p, int status, int events);
  static void on_resume(uv_timer_t* t);
  void drain(Listener& l);
  void pause_for_shortage();
  bool short_of_fds(int newest_fd) const;
  void close_listener(Listener* l);

  uv_loop_t* loop_;
  HandOff hand_off_;
  OnError on_error_;
  Options options_;
  std::map<int32_t, Listener*> listeners_;
  uv_timer_t* resume_timer_ = nullptr;  // heap: freed in its close callback
  uint32_t backoff_ms_ = 0;
  bool paused_ = false;
  bool closed_ = false;
};

}  // namespace epochgate::proxy
