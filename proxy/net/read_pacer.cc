// proxy/net/read_pacer.cc
#include "proxy/net/read_pacer.h"

#include <algorithm>

#include "proxy/net/connection.h"

namespace epochgate::proxy {

ReadPacer::ReadPacer(uv_loop_t* loop) {
  uv_check_init(loop, &check_);
  check_.data = this;
  // A waiting connection must not keep the loop alive on its own.
  uv_unref(reinterpret_cast<uv_handle_t*>(&check_));
}

void ReadPacer::defer(Connection& c) {
  if (closed_) {
    c.resume_after_pacing();
    return;
  }
  yields_++;
  waiting_.push_back(&c);
  if (!uv_is_active(reinterpret_cast<uv_handle_t*>(&check_))) uv_check_start(&check_, &ReadPacer::on_check);
}

void ReadPacer::forget(Connection& c) {
  waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), &c), waiting_.end());
}

void ReadPacer::close() {
  if (closed_) return;
  closed_ = true;
  waiting_.clear();
  uv_close(reinterpret_cast<uv_handle_t*>(&check_), nullptr);
}

void ReadPacer::on_check(uv_check_t* h) {
  auto* p = static_cast<ReadPacer*>(h->data);
  std::vector<Connection*> now;
  now.swap(p->waiting_);
  uv_check_stop(h);
  // Resuming re-arms each socket; the next poll finds it readable at once
  // together with everyone else.
  for (Connection* c : now) c->resume_after_pacing();
}

}  // namespace epochgate::proxy
