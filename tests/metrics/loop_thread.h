// tests/metrics/loop_thread.h: a libuv loop on its own thread for tests that
// drive a server from the test thread (curl, raw sockets). Work is posted with
// run() and waited for; stop() requires every other handle to be closed and
// reports uv_loop_close()'s result, which tests assert is 0.
#pragma once

#include <uv.h>

#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace epochgate::testing {

class LoopThread {
 public:
  LoopThread() {
    uv_loop_init(&loop_);
    uv_async_init(&loop_, &async_,
                  [](uv_async_t* a) { static_cast<LoopThread*>(a->data)->drain(); });
    async_.data = this;
    thread_ = std::thread([this] { uv_run(&loop_, UV_RUN_DEFAULT); });
  }

  ~LoopThread() {
    if (thread_.joinable()) stop();
  }

  uv_loop_t* loop() { return &loop_; }

  /// Runs `fn` on the loop thread and waits for it to return.
  template <typename F>
  auto run(F&& fn) -> decltype(fn()) {
    using R = decltype(fn());
    std::packaged_task<R()> task(std::forward<F>(fn));
    auto fut = task.get_future();
    post([&task] { task(); });
    return fut.get();
  }

  /// Closes the wake-up handle, joins the thread and returns uv_loop_close().
  int stop() {
    post([this] { uv_close(reinterpret_cast<uv_handle_t*>(&async_), nullptr); });
    thread_.join();
    return uv_loop_close(&loop_);
  }

 private:
  void post(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks_.push_back(std::move(fn));
    }
    uv_async_send(&async_);
  }

  void drain() {
    std::deque<std::function<void()>> tasks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      tasks.swap(tasks_);
    }
    for (auto& t : tasks) t();
  }

  uv_loop_t loop_;
  uv_async_t async_;
  std::thread thread_;
  std::mutex mutex_;
  std::deque<std::function<void()>> tasks_;
};

}  // namespace epochgate::testing
