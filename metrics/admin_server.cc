// metrics/admin_server.cc: admin HTTP/1.1 over libuv with llhttp. One Conn
// per client connection owns a TCP handle, a timer and a parser; both handles
// are freed only in their close callbacks (libuv rules) and the Conn with
// them. Write requests own their bytes and free them in the write callback,
// also when cancelled. A connection that must end (error, Connection: close)
// gets its last response, a shutdown (FIN), then lingers reading and
// discarding until EOF or a short timer, so the kernel never resets the
// response away. Never blocks the loop; never serves methods other than GET/HEAD.
// The routes are metrics/admin_routes.cc; what both share, metrics/admin_conn.h.
#include "metrics/admin_server.h"

#include <strings.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>

#include "metrics/admin_conn.h"

namespace epochgate::metrics {
namespace {

const char* reason_phrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

struct WriteReq {
  uv_write_t req;
  std::string data;
};

Conn* conn_of(llhttp_t* p) {
  return static_cast<Conn*>(p->data);
}

void on_conn_handle_closed(uv_handle_t* h) {
  Conn* c = static_cast<Conn*>(h->data);
  if (--c->open_handles > 0) return;
  AdminServer::Impl* server = c->server;
  server->conns.erase(c);
  delete c;
  server->handle_closed();
}

void close_conn(Conn* c) {
  if (c->state == ConnState::kClosing) return;
  c->state = ConnState::kClosing;
  uv_read_stop(reinterpret_cast<uv_stream_t*>(&c->tcp));
  uv_timer_stop(&c->timer);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->tcp), on_conn_handle_closed);
  uv_close(reinterpret_cast<uv_handle_t*>(&c->timer), on_conn_handle_closed);
}

void on_timeout(uv_timer_t* t);

void arm_timer(Conn* c, uint64_t ms) {
  uv_timer_stop(&c->timer);
  uv_timer_start(&c->timer, on_timeout, ms, 0);
}

void on_write_done(uv_write_t* req, int status) {
  // Runs also with UV_ECANCELED when the connection is closed first: the
  // request owns its bytes, so freeing here is always right.
  auto* w = reinterpret_cast<WriteReq*>(req);
  Conn* c = static_cast<Conn*>(req->data);
  delete w;
  if (status < 0 && status != UV_ECANCELED) close_conn(c);
}

void queue_write(Conn* c, std::string data) {
  auto* w = new WriteReq;
  w->data = std::move(data);
  w->req.data = c;
  uv_buf_t buf = uv_buf_init(w->data.data(), static_cast<unsigned>(w->data.size()));
  const int rc = uv_write(&w->req, reinterpret_cast<uv_stream_t*>(&c->tcp), &buf, 1, on_write_done);
  if (rc < 0) {
    delete w;
    close_conn(c);
  }
}

void on_shutdown_done(uv_shutdown_t* req, int status) {
  Conn* c = static_cast<Conn*>(req->data);
  delete req;
  if (status == UV_ECANCELED || c->state == ConnState::kClosing) return;
  if (status < 0) close_conn(c);
  // Otherwise keep reading until the peer's EOF or the linger timer.
}

// After the last response: send FIN once the queued writes are out, then
// discard input until EOF or linger_ms.
void finish(Conn* c) {
  if (c->state != ConnState::kOpen) return;
  c->state = ConnState::kFinishing;
  arm_timer(c, c->server->options.linger_ms);
  auto* req = new uv_shutdown_t;
  req->data = c;
  if (uv_shutdown(req, reinterpret_cast<uv_stream_t*>(&c->tcp), on_shutdown_done) < 0) {
    delete req;
    close_conn(c);
  }
}

std::string serialize(const Response& r, bool head, bool keep_alive) {
  std::string out;
  out.reserve(160 + (head ? 0 : r.body.size()));
  out += "HTTP/1.1 ";
  out += std::to_string(r.status);
  out += ' ';
  out += reason_phrase(r.status);
  out += "\r\nContent-Type: ";
  out += r.content_type;
  out += "\r\nContent-Length: ";
  out += std::to_string(r.body.size());
  out += "\r\nCache-Control: no-store\r\n";
  if (r.allow_header) out += "Allow: GET, HEAD\r\n";
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  if (!head) out += r.body;
  return out;
}

void send_response(Conn* c, const Response& r, bool head, bool keep_alive) {
  ++c->server->served;
  queue_write(c, serialize(r, head, keep_alive));
  if (!keep_alive) finish(c);
}

// A request we refuse before (or instead of) routing it: always closes.
void send_error(Conn* c, int status) {
  Response r;
  r.status = status;
  r.body = std::string(reason_phrase(status)) + "\n";
  send_response(c, r, false, false);
}

void on_timeout(uv_timer_t* t) {
  Conn* c = static_cast<Conn*>(t->data);
  if (c->state == ConnState::kOpen && c->in_message) {
    send_error(c, 408);  // slow client: the request did not finish in time
  } else {
    close_conn(c);  // idle keep-alive, or lingering after the last response
  }
}

int on_message_begin(llhttp_t* p) {
  Conn* c = conn_of(p);
  if (c->state != ConnState::kOpen) return -1;
  c->in_message = true;
  c->last_was_value = true;
  c->url.clear();
  c->in_host = c->has_host = false;
  c->host.clear();
  c->header_bytes = 0;
  c->header_count = 0;
  c->body_bytes = 0;
  c->last_active_ms = c->request_started_ms = uv_now(c->server->loop);
  arm_timer(c, c->server->options.request_timeout_ms);
  return 0;
}

int on_url(llhttp_t* p, const char* at, size_t len) {
  Conn* c = conn_of(p);
  if (c->url.size() + len > c->server->options.max_url_bytes) {
    c->error_status = 414;
    return -1;
  }
  c->url.append(at, len);
  return 0;
}

int on_header_field(llhttp_t* p, const char* at, size_t len) {
  Conn* c = conn_of(p);
  if (c->last_was_value) {
    ++c->header_count;
    c->in_host = false;
    c->header_name.clear();
  }
  c->last_was_value = false;
  c->header_name.append(at, len);
  c->in_host = c->header_name.size() == 4 && strncasecmp(c->header_name.data(), "host", 4) == 0;
  c->header_bytes += static_cast<uint32_t>(len);
  const AdminOptions& o = c->server->options;
  if (c->header_count > o.max_headers || c->header_bytes > o.max_header_bytes) {
    c->error_status = 431;
    return -1;
  }
  return 0;
}

int on_header_value(llhttp_t* p, const char* at, size_t len) {
  Conn* c = conn_of(p);
  if (c->in_host) {
    if (!c->last_was_value) c->host.clear();  // a second Host line: the last one counts
    c->host.append(at, len);
    c->has_host = true;
  }
  c->last_was_value = true;
  c->header_bytes += static_cast<uint32_t>(len);
  if (c->header_bytes > c->server->options.max_header_bytes) {
    c->error_status = 431;
    return -1;
  }
  return 0;
}

int on_headers_complete(llhttp_t* p) {
  Conn* c = conn_of(p);
  c->method = p->method;
  if ((p->flags & F_CONTENT_LENGTH) && p->content_length > c->server->options.max_body_bytes) {
    c->error_status = 413;
    return -1;
  }
  return 0;
}

int on_body(llhttp_t* p, const char* at, size_t len) {
  Conn* c = conn_of(p);
  c->body_bytes += len;
  if (c->body_bytes > c->server->options.max_body_bytes) {
    c->error_status = 413;
    return -1;
  }
  return 0;
}

int on_message_complete(llhttp_t* p) {
  Conn* c = conn_of(p);
  c->in_message = false;
  const bool head = c->method == HTTP_HEAD;
  bool keep_alive = llhttp_should_keep_alive(p) != 0;
  auto* stream = reinterpret_cast<uv_stream_t*>(&c->tcp);
  // A client that pipelines requests without reading the answers: stop
  // serving it once its unread responses pass the bound.
  if (stream->write_queue_size > c->server->options.max_pending_write_bytes) keep_alive = false;
  const Response r = c->server->route(*c);
  send_response(c, r, head, keep_alive);
  if (!keep_alive) {
    c->stop_parsing = true;
    return -1;  // ignore anything pipelined after a closing request
  }
  c->last_active_ms = uv_now(c->server->loop);
  arm_timer(c, c->server->options.idle_timeout_ms);
  return 0;
}

void on_alloc(uv_handle_t* h, size_t, uv_buf_t* buf) {
  Conn* c = static_cast<Conn*>(h->data);
  *buf = uv_buf_init(c->read_buf, sizeof c->read_buf);
}

void on_read(uv_stream_t* s, ssize_t nread, const uv_buf_t*) {
  Conn* c = static_cast<Conn*>(s->data);
  if (nread == 0) return;
  if (nread < 0) {
    // EOF or error. Queued writes would be cancelled by close; a client that
    // half-closed after sending still deserves its answers, so finish instead.
    if (nread == UV_EOF && c->state == ConnState::kOpen && !c->in_message &&
        s->write_queue_size > 0) {
      uv_read_stop(s);
      finish(c);
      return;
    }
    close_conn(c);
    return;
  }
  if (c->state != ConnState::kOpen) return;  // lingering: discard
  const llhttp_errno_t err = llhttp_execute(&c->parser, c->read_buf, static_cast<size_t>(nread));
  if (err == HPE_OK || c->state != ConnState::kOpen) return;
  if (err == HPE_PAUSED_UPGRADE) {
    // Upgrades (h2c, websocket) are not offered: the request was answered; end here.
    finish(c);
    return;
  }
  if (c->stop_parsing) return;
  send_error(c, c->error_status != 0 ? c->error_status : 400);
}

void on_listener_closed(uv_handle_t* h) {
  auto* server = static_cast<AdminServer::Impl*>(h->data);
  delete reinterpret_cast<uv_tcp_t*>(h);
  server->handle_closed();
}

// Makes room for `fresh`: closes the connection that has waited longest with
// no request in progress; failing that (every slot mid-request, e.g. slow
// senders), the one whose request started first. A connection already
// finishing frees its slot soon anyway and is closed first.
void evict_one(AdminServer::Impl* server, Conn* fresh) {
  Conn* idle = nullptr;
  Conn* busy = nullptr;
  Conn* finishing = nullptr;
  for (Conn* c : server->conns) {
    if (c == fresh || c->state == ConnState::kClosing) continue;
    if (c->state == ConnState::kFinishing) {
      finishing = c;
    } else if (!c->in_message) {
      if (!idle || c->last_active_ms < idle->last_active_ms) idle = c;
    } else if (!busy || c->request_started_ms < busy->request_started_ms) {
      busy = c;
    }
  }
  Conn* victim = finishing ? finishing : idle ? idle : busy;
  if (victim == nullptr) return;
  const char* why = victim == busy ? "busy" : "idle";
  close_conn(victim);
  ++server->evicted;
  if (server->handlers.on_evicted) server->handlers.on_evicted(why);
}

size_t live_connections(const AdminServer::Impl* server) {
  size_t n = 0;
  for (const Conn* c : server->conns) n += c->state != ConnState::kClosing;
  return n;
}

void on_connection(uv_stream_t* listener, int status) {
  auto* server = static_cast<AdminServer::Impl*>(listener->data);
  if (status < 0 || server->closing) return;
  Conn* c = new Conn;
  c->server = server;
  uv_tcp_init(server->loop, &c->tcp);
  uv_timer_init(server->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->open_handles = 2;
  server->open_handles += 1;  // the pair counts once; see on_conn_handle_closed
  server->conns.insert(c);
  if (uv_accept(listener, reinterpret_cast<uv_stream_t*>(&c->tcp)) < 0) {
    close_conn(c);
    return;
  }
  if (live_connections(server) > server->options.max_connections) evict_one(server, c);
  c->last_active_ms = uv_now(server->loop);
  sockaddr_storage peer{};
  int peer_len = sizeof peer;
  c->loopback_peer = uv_tcp_getpeername(&c->tcp, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0 &&
                     is_loopback_peer(peer);
  ++server->accepted;
  uv_tcp_nodelay(&c->tcp, 1);
  llhttp_init(&c->parser, HTTP_REQUEST, &server->settings);
  c->parser.data = c;
  // A connection must start a request within the request timeout.
  arm_timer(c, server->options.request_timeout_ms);
  if (uv_read_start(reinterpret_cast<uv_stream_t*>(&c->tcp), on_alloc, on_read) < 0) close_conn(c);
}

}  // namespace

void AdminServer::Impl::handle_closed() {
  if (--open_handles > 0 || !closing) return;
  auto cb = std::move(on_closed);
  on_closed = nullptr;
  if (orphaned) delete this;
  if (cb) cb();  // may destroy the AdminServer (and with it this Impl): touch nothing after
}

void AdminServer::Impl::close_all() {
  closing = true;
  if (listener != nullptr) {
    uv_close(reinterpret_cast<uv_handle_t*>(listener), on_listener_closed);
    listener = nullptr;
  }
  for (Conn* c : conns) close_conn(c);
}

AdminServer::AdminServer(uv_loop_t* loop, AdminHandlers handlers, AdminOptions options)
    : impl_(new Impl(loop, std::move(handlers), options)) {
  llhttp_settings_init(&impl_->settings);
  impl_->settings.on_message_begin = on_message_begin;
  impl_->settings.on_url = on_url;
  impl_->settings.on_header_field = on_header_field;
  impl_->settings.on_header_value = on_header_value;
  impl_->settings.on_headers_complete = on_headers_complete;
  impl_->settings.on_body = on_body;
  impl_->settings.on_message_complete = on_message_complete;
}

AdminServer::~AdminServer() {
  if (impl_->open_handles == 0) {
    delete impl_;
    return;
  }
  impl_->orphaned = true;
  impl_->on_closed = nullptr;
  if (!impl_->closing) impl_->close_all();
}

ListenResult AdminServer::listen(const std::string& host_in, uint16_t port) {
  ListenResult result;
  auto fail = [&](int err, const std::string& what) {
    result.error = err;
    result.message = what + ": " + uv_strerror(err);
    return result;
  };
  if (impl_->listener != nullptr || impl_->closing) return fail(UV_EALREADY, "admin listen");
  std::string host = host_in;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) host = "127.0.0.1";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  uv_getaddrinfo_t gai;
  // No callback: libuv resolves synchronously (startup only, never on a hot loop).
  int rc = uv_getaddrinfo(impl_->loop, &gai, nullptr, host.c_str(), std::to_string(port).c_str(),
                          &hints);
  if (rc < 0) return fail(rc, "admin address '" + host_in + "'");
  sockaddr_storage addr{};
  std::memcpy(&addr, gai.addrinfo->ai_addr, gai.addrinfo->ai_addrlen);
  uv_freeaddrinfo(gai.addrinfo);

  auto* tcp = new uv_tcp_t;
  uv_tcp_init(impl_->loop, tcp);
  tcp->data = impl_;
  impl_->listener = tcp;
  impl_->open_handles += 1;
  rc = uv_tcp_bind(tcp, reinterpret_cast<const sockaddr*>(&addr), 0);
  if (rc == 0) rc = uv_listen(reinterpret_cast<uv_stream_t*>(tcp), 128, on_connection);
  if (rc < 0) {
    impl_->listener = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(tcp), on_listener_closed);
    return fail(rc, "admin listen on " + host_in + ":" + std::to_string(port));
  }
  sockaddr_storage bound{};
  int len = sizeof bound;
  uv_tcp_getsockname(tcp, reinterpret_cast<sockaddr*>(&bound), &len);
  impl_->port =
      ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                        : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  result.port = impl_->port;
  return result;
}

uint16_t AdminServer::bound_port() const {
  return impl_->port;
}

void AdminServer::close(std::function<void()> on_closed) {
  if (impl_->closing) {
    if (on_closed) impl_->on_closed = std::move(on_closed);
    return;
  }
  impl_->on_closed = std::move(on_closed);
  impl_->close_all();
  if (impl_->open_handles == 0) {
    auto cb = std::move(impl_->on_closed);
    impl_->on_closed = nullptr;
    if (cb) cb();
  }
}

std::size_t AdminServer::connection_count() const {
  return impl_->conns.size();
}

uint64_t AdminServer::requests_served() const {
  return impl_->served;
}

uint64_t AdminServer::connections_evicted() const { return impl_->evicted; }

uint64_t AdminServer::connections_accepted() const {
  return impl_->accepted;
}

}  // namespace epochgate::metrics
