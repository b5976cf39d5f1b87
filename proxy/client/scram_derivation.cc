// proxy/client/scram_derivation.cc
#include "proxy/client/scram_derivation.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <vector>

namespace epochgate::proxy {

namespace {
std::atomic<size_t> g_queued{0};
}  // namespace

// One PBKDF2 on the thread pool and the logins of one loop waiting for it.
// Created, finished and deleted on the loop's thread; only `need` is
// touched by the pool thread, between uv_queue_work and after_work.
struct ScramDerivation::Job {
  uv_work_t req{};
  std::unique_ptr<ScramSaltedPassword> need;
  std::vector<ScramDerivation*> waiters;
  // Derivations of this loop by cache key, so that logins needing the same
  // salted password (one credential, one broker salt) share one.
  using Registry = std::map<std::string, Job*>;
  Registry* registry = nullptr;
  std::string key;

  static Registry& registry_of_this_thread() {
    thread_local Registry r;  // one loop per thread
    return r;
  }

  static void work(uv_work_t* req) { static_cast<Job*>(req->data)->need->derive(); }

  static void after(uv_work_t* req, int /*status*/) {
    Job* job = static_cast<Job*>(req->data);
    if (!job->key.empty()) job->registry->erase(job->key);
    g_queued.fetch_sub(1);
    // A waiter's callback may destroy other waiters (they then leave
    // `waiters`) or its own ScramDerivation (its callback was moved out).
    while (!job->waiters.empty()) {
      ScramDerivation* w = job->waiters.back();
      job->waiters.pop_back();
      w->job_ = nullptr;
      Done done = std::move(w->done_);
      done(std::make_unique<ScramSaltedPassword>(*job->need));
    }
    delete job;
  }
};

std::unique_ptr<ScramDerivation> ScramDerivation::start(uv_loop_t* loop,
                                                        std::unique_ptr<ScramSaltedPassword> need,
                                                        Done done, std::string& error) {
  std::unique_ptr<ScramDerivation> d(new ScramDerivation());
  d->done_ = std::move(done);
  Job::Registry& registry = Job::registry_of_this_thread();
  if (!need->key.empty()) {
    auto it = registry.find(need->key);
    if (it != registry.end()) {
      d->job_ = it->second;
      it->second->waiters.push_back(d.get());
      return d;
    }
  }
  if (g_queued.fetch_add(1) >= kMaxQueued) {
    g_queued.fetch_sub(1);
    error = "too many SCRAM salted-password derivations queued (" +
            std::to_string(kMaxQueued) + ")";
    return nullptr;
  }
  auto job = std::make_unique<Job>();
  job->req.data = job.get();
  job->registry = &registry;
  job->key = need->key;
  job->need = std::move(need);
  int rc = uv_queue_work(loop, &job->req, &Job::work, &Job::after);
  if (rc != 0) {
    g_queued.fetch_sub(1);
    error = std::string("cannot queue the SCRAM derivation: ") + uv_strerror(rc);
    return nullptr;
  }
  if (!job->key.empty()) registry[job->key] = job.get();
  job->waiters.push_back(d.get());
  d->job_ = job.release();  // deleted by Job::after
  return d;
}

ScramDerivation::~ScramDerivation() {
  if (job_ == nullptr) return;
  auto& w = job_->waiters;
  w.erase(std::remove(w.begin(), w.end(), this), w.end());
}

size_t ScramDerivation::queued() { return g_queued.load(); }

}  // namespace epochgate::proxy
