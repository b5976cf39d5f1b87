// metrics/admin_conn.h: what the admin server's two halves share, inside
// metrics/ only: one client connection (Conn), the server's state
// (AdminServer::Impl) and a response before it is serialized. The HTTP
// plumbing (metrics/admin_server.cc) owns the handles and the parser; the
// routes (metrics/admin_routes.cc) only read a finished request and answer it.
#pragma once

#include <llhttp.h>
#include <uv.h>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>

#include "metrics/admin_server.h"

namespace epochgate::metrics {

struct Conn;

enum class ConnState {
  kOpen,       // serving requests
  kFinishing,  // final response queued, shutdown requested; discard input
  kClosing,    // uv_close called
};

/// A response as the routes build it; admin_server.cc serializes it.
struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  bool allow_header = false;
};

/// The server: listener, connections, counters and the parser settings.
struct AdminServer::Impl {
  Impl(uv_loop_t* l, AdminHandlers h, AdminOptions o)
      : loop(l), handlers(std::move(h)), options(o) {}

  uv_loop_t* loop;
  AdminHandlers handlers;
  AdminOptions options;
  uv_tcp_t* listener = nullptr;  // heap: freed in its close callback
  uint16_t port = 0;
  std::unordered_set<Conn*> conns;
  int open_handles = 0;
  bool closing = false;
  bool orphaned = false;  // AdminServer destroyed; delete self when handles are closed
  std::function<void()> on_closed;
  uint64_t served = 0;
  uint64_t accepted = 0;
  uint64_t evicted = 0;
  llhttp_settings_t settings{};

  void handle_closed();
  void close_all();
  Response route(const Conn& c);
};

/// One admin client connection: a TCP handle, a timer and a parser, freed
/// together once both handles are closed.
struct Conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  llhttp_t parser;
  AdminServer::Impl* server = nullptr;
  ConnState state = ConnState::kOpen;
  int open_handles = 0;
  bool in_message = false;
  bool last_was_value = true;  // header callbacks: next field starts a new header
  bool in_host = false;        // the header being read is Host
  bool has_host = false;
  std::string host;            // the Host header's value
  int error_status = 0;        // limit exceeded inside a callback: answer this and close
  bool stop_parsing = false;   // we ended parsing on purpose (not a malformed request)
  std::string url;
  std::string header_name;  // the header name being read
  uint32_t header_bytes = 0;
  uint32_t header_count = 0;
  uint64_t body_bytes = 0;
  int method = 0;
  uint64_t last_active_ms = 0;  // accept, request start, response: eviction order
  uint64_t request_started_ms = 0;
  bool loopback_peer = false;
  char read_buf[16384];
};

}  // namespace epochgate::metrics
