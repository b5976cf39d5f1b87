// proxy/app/worker_placement.h: which worker (event loop) takes an accepted
// client connection. With rerouting on, every connection from one client
// host goes to one worker, so one producer's connections to several
// brokers share that worker's order guard (proxy/reroute/rerouter.h) without a
// lock; otherwise connections go round-robin. Reads the peer address only.
#pragma once

#include <cstddef>

namespace epochgate::proxy {

/// The worker index in [0, workers) for accepted descriptor `fd`: a hash of
/// the peer's IP address (not its port) when `by_peer`, else `next % workers`.
/// Falls back to `next % workers` when the peer address cannot be read.
size_t place_connection(int fd, size_t workers, size_t next, bool by_peer);

}  // namespace epochgate::proxy
