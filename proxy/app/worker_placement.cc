// proxy/app/worker_placement.cc
#include "proxy/app/worker_placement.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>

namespace epochgate::proxy {

size_t place_connection(int fd, size_t workers, size_t next, bool by_peer) {
  if (workers == 0) return 0;
  if (!by_peer || workers == 1) return next % workers;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return next % workers;
  const uint8_t* p = nullptr;
  size_t n = 0;
  if (ss.ss_family == AF_INET) {
    p = reinterpret_cast<const uint8_t*>(&reinterpret_cast<sockaddr_in*>(&ss)->sin_addr);
    n = 4;
  } else if (ss.ss_family == AF_INET6) {
    p = reinterpret_cast<const uint8_t*>(&reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr);
    n = 16;
  } else {
    return next % workers;
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the address bytes
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return static_cast<size_t>(h % workers);
}

}  // namespace epochgate::proxy
