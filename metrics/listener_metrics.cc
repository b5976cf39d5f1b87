// metrics/listener_metrics.cc
#include "metrics/listener_metrics.h"

#include "metrics/families.h"

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

namespace epochgate::metrics {

struct ListenerMetrics::Impl {
  explicit Impl(prometheus::Registry& r)
      : listeners(register_family<FamilyId::listeners>(r)),
        refused(register_family<FamilyId::listeners_refused_total>(r)),
        bind_failures(register_family<FamilyId::listener_bind_failures_total>(r)),
        closed(register_family<FamilyId::listeners_closed_total>(r)),
        accept_errors(register_family<FamilyId::accept_errors_total>(r)),
        fd_limit(register_family<FamilyId::fd_limit>(r)),
        fds_needed(register_family<FamilyId::fds_needed>(r)),
        workers(register_family<FamilyId::workers>(r)),
        buffer_budget(register_family<FamilyId::buffer_budget_bytes>(r)),
        evicted(register_family<FamilyId::admin_connections_evicted_total>(r)),
        listening(listeners.Add({{"state", "listening"}})),
        bind_failed(listeners.Add({{"state", "bind_failed"}})),
        refused_now(listeners.Add({{"state", "refused"}})),
        bind_failures_total(bind_failures.Add({})),
        closed_total(closed.Add({})),
        fd_limit_value(fd_limit.Add({})),
        fds_needed_value(fds_needed.Add({})),
        workers_value(workers.Add({})),
        buffer_budget_value(buffer_budget.Add({})) {
    for (const char* r : {"max_node_id", "max_listeners", "port_rule"}) refused.Add({{"reason", r}});
    for (const char* r : {"emfile", "enfile", "enobufs", "enomem", "fd_reserve", "other"})
      accept_errors.Add({{"reason", r}});
    for (const char* r : {"idle", "busy"}) evicted.Add({{"reason", r}});
  }

  prometheus::Family<prometheus::Gauge>& listeners;
  prometheus::Family<prometheus::Counter>& refused;
  prometheus::Family<prometheus::Counter>& bind_failures;
  prometheus::Family<prometheus::Counter>& closed;
  prometheus::Family<prometheus::Counter>& accept_errors;
  prometheus::Family<prometheus::Gauge>& fd_limit;
  prometheus::Family<prometheus::Gauge>& fds_needed;
  prometheus::Family<prometheus::Gauge>& workers;
  prometheus::Family<prometheus::Gauge>& buffer_budget;
  prometheus::Family<prometheus::Counter>& evicted;
  prometheus::Gauge& listening;
  prometheus::Gauge& bind_failed;
  prometheus::Gauge& refused_now;
  prometheus::Counter& bind_failures_total;
  prometheus::Counter& closed_total;
  prometheus::Gauge& fd_limit_value;
  prometheus::Gauge& fds_needed_value;
  prometheus::Gauge& workers_value;
  prometheus::Gauge& buffer_budget_value;
};

ListenerMetrics::ListenerMetrics(std::shared_ptr<prometheus::Registry> registry)
    : impl_(std::make_unique<Impl>(*registry)) {}

ListenerMetrics::~ListenerMetrics() = default;

void ListenerMetrics::set_listeners(uint32_t listening, uint32_t bind_failed, uint32_t refused) {
  impl_->listening.Set(listening);
  impl_->bind_failed.Set(bind_failed);
  impl_->refused_now.Set(refused);
}

// Labels outside the fixed sets fold into "other" so the family stays bounded.
void ListenerMetrics::listener_refused(std::string_view reason) {
  std::string r(reason);
  if (r != "max_node_id" && r != "max_listeners") r = "port_rule";
  impl_->refused.Add({{"reason", r}}).Increment();
}

void ListenerMetrics::bind_failure() { impl_->bind_failures_total.Increment(); }

void ListenerMetrics::listener_closed() { impl_->closed_total.Increment(); }

void ListenerMetrics::accept_error(std::string_view reason) {
  std::string r(reason);
  if (r != "emfile" && r != "enfile" && r != "enobufs" && r != "enomem" && r != "fd_reserve")
    r = "other";
  impl_->accept_errors.Add({{"reason", r}}).Increment();
}

void ListenerMetrics::set_fd_limit(uint64_t limit, uint64_t needed) {
  impl_->fd_limit_value.Set(static_cast<double>(limit));
  impl_->fds_needed_value.Set(static_cast<double>(needed));
}

void ListenerMetrics::set_workers(unsigned n) { impl_->workers_value.Set(static_cast<double>(n)); }

void ListenerMetrics::set_buffer_budget(uint64_t bytes) {
  impl_->buffer_budget_value.Set(static_cast<double>(bytes));
}

void ListenerMetrics::admin_evicted(std::string_view reason) {
  impl_->evicted.Add({{"reason", std::string(reason == "idle" ? "idle" : "busy")}}).Increment();
}

}  // namespace epochgate::metrics
