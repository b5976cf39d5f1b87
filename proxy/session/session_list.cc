// proxy/session/session_list.cc: the intrusive list of one worker's sessions
// (proxy/session/session.h); links only, never frees a session.
#include "proxy/session/session.h"

namespace epochgate::proxy {

void SessionList::add(Session* s) {
  s->prev = nullptr;
  s->next = head_;
  if (head_) head_->prev = s;
  head_ = s;
  ++size_;
}

void SessionList::remove(Session* s) {
  if (s->prev) s->prev->next = s->next; else head_ = s->next;
  if (s->next) s->next->prev = s->prev;
  s->prev = s->next = nullptr;
  --size_;
  ++removed_;
}

}  // namespace epochgate::proxy
