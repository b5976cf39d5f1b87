// proxy/net/listen_socket.cc
#include "proxy/net/listen_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace epochgate::proxy {

bool open_listen_socket(const std::string& host, uint16_t port, int backlog, ListenSocket& out,
                        std::string& error) {
  std::string where = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_str = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), port_str.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    error = where + ": cannot resolve: " + gai_strerror(rc);
    return false;
  }
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = where + ": socket: " + std::strerror(errno);
    freeaddrinfo(res);
    return false;
  }
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
    error = where + ": bind: " + std::strerror(errno);
    close(fd);
    freeaddrinfo(res);
    return false;
  }
  freeaddrinfo(res);
  if (listen(fd, backlog) != 0) {
    error = where + ": listen: " + std::strerror(errno);
    close(fd);
    return false;
  }
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  out.fd = fd;
  out.port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                      : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return true;
}

}  // namespace epochgate::proxy
