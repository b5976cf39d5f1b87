// proxy/app/acceptor.cc
#include "proxy/app/acceptor.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace epochgate::proxy {

namespace {
// Shortages of descriptors or kernel memory: retrying at once cannot help.
const char* shortage_reason(int err) {
  switch (err) {
    case EMFILE:
      return "emfile";
    case ENFILE:
      return "enfile";
    case ENOBUFS:
      return "enobufs";
    case ENOMEM:
      return "enomem";
    default:
      return nullptr;
  }
}
}  // namespace

Acceptor::Acceptor(uv_loop_t* loop, HandOff hand_off, OnError on_error, Options options)
    : loop_(loop),
      hand_off_(std::move(hand_off)),
      on_error_(std::move(on_error)),
      options_(options) {
  resume_timer_ = new uv_timer_t;
  uv_timer_init(loop_, resume_timer_);
  resume_timer_->data = this;
}

Acceptor::~Acceptor() { close_all(); }

void Acceptor::add(int32_t node_id, int fd) {
  if (closed_) {
    ::close(fd);
    return;
  }
  remove(node_id);
  auto* l = new Listener;
  l->fd = fd;
  l->node_id = node_id;
  l->owner = this;
  if (uv_poll_init_socket(loop_, &l->poll, fd) != 0) {
    ::close(fd);
    delete l;
    if (on_error_) on_error_("other");
    return;
  }
  l->poll.data = l;
  listeners_[node_id] = l;
  if (!paused_) uv_poll_start(&l->poll, UV_READABLE, &Acceptor::on_readable);
}

void Acceptor::close_listener(Listener* l) {
  uv_close(reinterpret_cast<uv_handle_t*>(&l->poll), [](uv_handle_t* h) {
    auto* dead = static_cast<Listener*>(h->data);
    ::close(dead->fd);  // only now: libuv may still watch it until the close
    delete dead;
  });
}

void Acceptor::remove(int32_t node_id) {
  auto it = listeners_.find(node_id);
  if (it == listeners_.end()) return;
  close_listener(it->second);
  listeners_.erase(it);
}

void Acceptor::close_all() {
  if (closed_) return;
  closed_ = true;
  for (auto& [node, l] : listeners_) close_listener(l);
  listeners_.clear();
  uv_close(reinterpret_cast<uv_handle_t*>(resume_timer_),
           [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
  resume_timer_ = nullptr;
}

void Acceptor::on_readable(uv_poll_t* p, int status, int) {
  auto* l = static_cast<Listener*>(p->data);
  if (status < 0) {
    if (l->owner->on_error_) l->owner->on_error_("other");
    return;
  }
  l->owner->drain(*l);
}

void Acceptor::drain(Listener& l) {
  for (uint32_t i = 0; i < options_.batch && !paused_; ++i) {
    int fd = ::accept4(l.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      hand_off_(l.node_id, fd);
      const bool short_now = short_of_fds(fd);
      if (!short_now) backoff_ms_ = 0;
      if (short_now) {
        if (on_error_) on_error_("fd_reserve");
        pause_for_shortage();
        return;
      }
      continue;
    }
    const int err = errno;
    if (err == EAGAIN || err == EWOULDBLOCK) return;
    if (const char* why = shortage_reason(err)) {
      if (on_error_) on_error_(why);
      pause_for_shortage();
      return;
    }
    // accept(2): ECONNABORTED, EPROTO, EINTR and the new socket's pending
    // network errors are the peer's problem; the next one may be fine.
    if (err == ECONNABORTED || err == EPROTO || err == EINTR || err == ENETDOWN ||
        err == ENOPROTOOPT || err == EHOSTDOWN || err == ENONET || err == EHOSTUNREACH ||
        err == EOPNOTSUPP || err == ENETUNREACH)
      continue;
    if (on_error_) on_error_("other");
    return;
  }
}

bool Acceptor::short_of_fds(int newest_fd) const {
  if (options_.fd_reserve == 0 || newest_fd < 0) return false;
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return false;
  // Lowest-free numbering makes `newest_fd` + 1 a lower bound of the open
  // descriptors; the owner's count covers holes and dials still to come.
  uint64_t used = static_cast<uint64_t>(newest_fd) + 1;
  if (options_.descriptors_committed) used = std::max(used, options_.descriptors_committed());
  return used + options_.fd_reserve >= static_cast<uint64_t>(rl.rlim_cur);
}

void Acceptor::pause_for_shortage() {
  if (paused_ || closed_) return;
  paused_ = true;
  for (auto& [node, l] : listeners_) uv_poll_stop(&l->poll);
  backoff_ms_ = backoff_ms_ == 0 ? options_.backoff_initial_ms
                                 : std::min(options_.backoff_max_ms, backoff_ms_ * 2);
  uv_timer_start(resume_timer_, &Acceptor::on_resume, backoff_ms_, 0);
}

void Acceptor::on_resume(uv_timer_t* t) {
  auto* a = static_cast<Acceptor*>(t->data);
  if (a->closed_) return;
  // Still short? The lowest free number says how many are left; waiting on
  // costs nothing, while accepting now would eat the reserve one by one.
  bool still_short = false;
  if (!a->listeners_.empty()) {
    int probe = ::fcntl(a->listeners_.begin()->second->fd, F_DUPFD_CLOEXEC, 0);
    still_short = probe < 0 || a->short_of_fds(probe);
    if (probe >= 0) ::close(probe);
  }
  a->paused_ = false;
  if (still_short) {
    a->pause_for_shortage();
    return;
  }
  for (auto& [node, l] : a->listeners_) uv_poll_start(&l->poll, UV_READABLE, &Acceptor::on_readable);
}

}  // namespace epochgate::proxy
