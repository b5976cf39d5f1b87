// tests/metrics/folded_histogram_test.cc: a FoldedHistogram exposes, once
// folded, exactly what prometheus::Histogram::Observe of the same values
// shows (bucket edges, +Inf, NaN's bucket, the sum), loses nothing observed from
// several threads, and folds nothing twice.
#include "metrics/folded_histogram.h"

#include <gtest/gtest.h>
#include <prometheus/client_metric.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

namespace epochgate::metrics {
namespace {

const std::vector<double> kBounds = {0.001, 0.01, 0.1, 1.0};

std::vector<uint64_t> buckets_of(const prometheus::Histogram& h) {
  std::vector<uint64_t> out;
  for (const auto& b : h.Collect().histogram.bucket) out.push_back(b.cumulative_count);
  return out;
}

TEST(FoldedHistogram, FoldedShowsWhatObserveWouldHave) {
  const double values[] = {0.0005, 0.001, 0.0010001, 0.05, 1.0, 2.5, -1.0,
                           std::numeric_limits<double>::infinity()};
  prometheus::Histogram direct(kBounds);
  prometheus::Histogram exposed(kBounds);
  FoldedHistogram folded(exposed, kBounds);
  for (double v : values) {
    direct.Observe(v);
    folded.observe(v);
  }
  EXPECT_EQ(buckets_of(exposed), std::vector<uint64_t>(buckets_of(direct).size(), 0))
      << "nothing shows before a fold";
  folded.fold();
  EXPECT_EQ(buckets_of(exposed), buckets_of(direct));
  EXPECT_EQ(exposed.Collect().histogram.sample_count, direct.Collect().histogram.sample_count);
  EXPECT_EQ(exposed.Collect().histogram.sample_sum, direct.Collect().histogram.sample_sum);
}

TEST(FoldedHistogram, NanGoesToTheBucketObserveChooses) {
  prometheus::Histogram direct(kBounds);
  prometheus::Histogram exposed(kBounds);
  FoldedHistogram folded(exposed, kBounds);
  direct.Observe(std::nan(""));
  folded.observe(std::nan(""));
  folded.fold();
  EXPECT_EQ(buckets_of(exposed), buckets_of(direct));
}

TEST(FoldedHistogram, ObservationsFromThreadsAreAllFoldedOnce) {
  prometheus::Histogram exposed(kBounds);
  FoldedHistogram folded(exposed, kBounds);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        folded.observe(0.005);
        if (i % 1000 == 0) folded.fold();  // a scrape meanwhile
      }
    });
  for (auto& th : threads) th.join();
  folded.fold();
  folded.fold();  // nothing new: adds nothing
  const auto h = exposed.Collect().histogram;
  EXPECT_EQ(h.sample_count, 40000u);
  EXPECT_EQ(buckets_of(exposed), (std::vector<uint64_t>{0, 40000, 40000, 40000, 40000}));
  EXPECT_NEAR(h.sample_sum, 200.0, 1e-6);
}

}  // namespace
}  // namespace epochgate::metrics
