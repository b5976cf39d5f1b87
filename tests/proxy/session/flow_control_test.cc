// FlowControl: which side of a session reads. The client side pauses while
// the upstream's output is above its high watermark, at the in-flight cap,
// while draining, or while it holds its share of an exceeded buffer budget,
// and resumes when the cause is gone; the upstream side pauses only on the
// client's output, never on the budget (its answers are what frees memory).
// Over the budget, only connections holding their fair share stop.
#include "proxy/session/flow_control.h"

#include <uv.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>

#include "config/config.h"
#include "proxy/core/worker_context.h"
#include "proxy/net/buffer_budget.h"
#include "proxy/net/connection.h"
#include "proxy/session/partial_frame_clock.h"
#include "tests/proxy/fake_transport.h"

namespace epochgate::proxy::testing {
namespace {

struct IgnoreEvents : ConnectionOwner {
  void on_readable(Connection&) override {}
  void on_read_error(Connection&, int) override {}
  void on_drained(Connection&) override {}
  void on_write_error(Connection&, int) override {}
  void on_closed(Connection&) override {}
};

/// One side of a session: a Connection over a FakeTransport the test plays.
struct Side {
  Side(BufferPool& pool, ConnectionOwner& owner) {
    auto t = std::make_unique<FakeTransport>();
    wire = t.get();
    conn = std::make_unique<Connection>(std::move(t), pool, owner);
    conn->set_watermarks(/*low=*/10, /*high=*/100);
  }
  ~Side() {
    conn->close();
    wire->pump();
  }
  /// Queues `n` bytes of output the peer does not take yet.
  void stuck_output(size_t n) {
    wire->set_try_write_limit(0);
    wire->set_auto_complete(false);
    std::string bytes(n, 'x');
    conn->queue(bytes.data(), bytes.size());
    conn->flush();
  }
  /// The peer takes everything queued.
  void peer_takes_all() {
    wire->set_try_write_limit(SIZE_MAX);
    wire->complete_write(0);
    wire->set_auto_complete(true);
    wire->pump();
  }
  FakeTransport* wire = nullptr;
  std::unique_ptr<Connection> conn;
};

/// The budget's limit becomes what is held now: not exceeded, and `c`
/// holds all of it (at least its share, however many connections join).
void limit_to_what_is_held(BufferBudget& budget, const Connection& c) {
  int64_t held = std::max<int64_t>(budget.used(), static_cast<int64_t>(c.held_bytes()));
  ASSERT_GT(held, 0);
  budget.set_limit(static_cast<uint64_t>(held));
}

class FlowControlTest : public ::testing::Test {
 protected:
  FlowControlTest() {
    config::Config c;
    c.limits.max_in_flight_per_connection = 4;
    ctx.config = std::make_shared<const config::Config>(c);
    ctx.budget_recheck = [this] { ++rechecks; };
    flow = std::make_unique<FlowControl>(ctx, *client.conn, partial, /*node_id=*/1);
    flow->attach_upstream(*upstream.conn);
    client.conn->start_reading();
    upstream.conn->start_reading();
  }

  WorkerContext ctx;
  IgnoreEvents events;
  Side client{ctx.pool, events};
  Side upstream{ctx.pool, events};
  PartialFrameClock partial;
  std::unique_ptr<FlowControl> flow;
  int rechecks = 0;
};

TEST_F(FlowControlTest, ClientPausesWhileUpstreamOutputIsAboveHighWatermark) {
  EXPECT_FALSE(flow->update_client(false, 0));
  EXPECT_TRUE(client.conn->reading());
  upstream.stuck_output(200);
  ASSERT_TRUE(upstream.conn->above_high_watermark());
  flow->update_client(false, 0);
  EXPECT_FALSE(client.conn->reading());
  upstream.peer_takes_all();
  flow->update_client(false, 0);
  EXPECT_TRUE(client.conn->reading());
}

TEST_F(FlowControlTest, ClientPausesAtTheInFlightCap) {
  flow->update_client(false, 3);
  EXPECT_TRUE(client.conn->reading());
  flow->update_client(false, 4);
  EXPECT_FALSE(client.conn->reading()) << "limits.max_in_flight_per_connection reached";
  flow->update_client(false, 3);
  EXPECT_TRUE(client.conn->reading()) << "an answer makes room";
}

TEST_F(FlowControlTest, DrainingStopsClientReadsForGood) {
  flow->update_client(true, 0);
  EXPECT_FALSE(client.conn->reading());
  flow->update_client(true, 0);
  EXPECT_FALSE(client.conn->reading());
}

TEST_F(FlowControlTest, ARequestStreamingUpstreamIsReadToItsEndDespiteDrainOrInFlightCap) {
  // Its head went upstream: the broker answers nothing before its last byte,
  // so neither the in-flight cap nor a drain may stop reading its rest.
  flow->update_client(false, 4, /*mid_request=*/true);
  EXPECT_TRUE(client.conn->reading());
  flow->update_client(true, 4, /*mid_request=*/true);
  EXPECT_TRUE(client.conn->reading());
  upstream.stuck_output(200);
  flow->update_client(false, 1, /*mid_request=*/true);
  EXPECT_FALSE(client.conn->reading()) << "the broker's full output still paces it";
  upstream.peer_takes_all();
  flow->update_client(false, 1, /*mid_request=*/true);
  EXPECT_TRUE(client.conn->reading());
  flow->update_client(true, 1, /*mid_request=*/false);
  EXPECT_FALSE(client.conn->reading()) << "once it ended, the drain stops reads";
}

TEST_F(FlowControlTest, ResumingReportsFramesAlreadyWaitingInTheInput) {
  client.wire->peer_sends("abc");
  client.wire->pump();
  ASSERT_FALSE(client.conn->input().empty());
  flow->update_client(false, 4);
  ASSERT_FALSE(client.conn->reading());
  EXPECT_TRUE(flow->update_client(false, 0)) << "the caller processes them now";
}

TEST_F(FlowControlTest, UpstreamPausesWhileClientOutputIsAboveHighWatermark) {
  flow->update_upstream();
  EXPECT_TRUE(upstream.conn->reading());
  client.stuck_output(200);
  flow->update_upstream();
  EXPECT_FALSE(upstream.conn->reading());
  client.peer_takes_all();
  flow->update_upstream();
  EXPECT_TRUE(upstream.conn->reading());
}

TEST_F(FlowControlTest, StreamedResponseWaitsWhileClientOutputHoldsAnyBytes) {
  client.stuck_output(50);  // under the high watermark
  flow->update_upstream(/*streaming=*/false);
  EXPECT_TRUE(upstream.conn->reading()) << "not streaming: the watermark decides";
  flow->update_upstream(/*streaming=*/true);
  EXPECT_FALSE(upstream.conn->reading()) << "the rest waits in the socket, not copied";
  client.peer_takes_all();
  flow->update_upstream(true);
  EXPECT_TRUE(upstream.conn->reading());
}

TEST_F(FlowControlTest, SplicedRecordsWaitWhileUpstreamOutputHoldsAnyBytes) {
  upstream.stuck_output(50);  // under the high watermark: what a splice spilled
  flow->update_client(false, 1, /*mid_request=*/true, /*splicing=*/false);
  EXPECT_TRUE(client.conn->reading()) << "not splicing: the watermark decides";
  flow->update_client(false, 1, /*mid_request=*/true, /*splicing=*/true);
  EXPECT_FALSE(client.conn->reading()) << "the records wait in the socket, not copied";
  flow->update_client(true, 4, /*mid_request=*/true, /*splicing=*/true);
  EXPECT_FALSE(client.conn->reading());
  upstream.peer_takes_all();
  flow->update_client(false, 1, /*mid_request=*/true, /*splicing=*/true);
  EXPECT_TRUE(client.conn->reading()) << "the queue is out: a splice moves the rest";
}

TEST_F(FlowControlTest, BudgetPausesTheClientAndAsksForARecheckUntilItFrees) {
  BufferBudget budget;
  ctx.budget = &budget;
  client.conn->set_budget(&budget, /*enforce=*/true);
  client.wire->peer_sends("abc");  // the client now holds an input buffer
  client.wire->pump();
  limit_to_what_is_held(budget, *client.conn);
  flow->update_client(false, 0);
  ASSERT_TRUE(client.conn->reading()) << "under the budget";
  auto charge = std::make_unique<BudgetCharge>(&budget, 100000);
  ASSERT_TRUE(client.conn->over_budget());
  flow->update_client(false, 0);
  EXPECT_FALSE(client.conn->reading());
  EXPECT_TRUE(flow->budget_paused());
  EXPECT_EQ(rechecks, 1) << "the worker re-checks paused sessions";
  flow->update_upstream();
  EXPECT_TRUE(upstream.conn->reading()) << "the budget never stops answers";
  charge.reset();
  flow->update_client(false, 0);
  EXPECT_TRUE(client.conn->reading());
  EXPECT_FALSE(flow->budget_paused());
  client.conn->set_budget(nullptr, false);
}

TEST_F(FlowControlTest, PartialFrameClockStopsWhileTheClientWaitsForTheBroker) {
  upstream.stuck_output(200);
  flow->update_client(false, 0);
  ASSERT_FALSE(client.conn->reading());
  EXPECT_TRUE(partial.held()) << "the broker's full output holds the client";
  upstream.peer_takes_all();
  flow->update_client(false, 0);
  EXPECT_FALSE(partial.held());
  upstream.stuck_output(50);  // a spliced request's records wait for the queue
  flow->update_client(false, 1, /*mid_request=*/true, /*splicing=*/true);
  EXPECT_TRUE(partial.held());
  upstream.peer_takes_all();
  flow->update_client(false, 1, true, true);
  EXPECT_FALSE(partial.held());
}

TEST_F(FlowControlTest, PartialFrameClockIsNotHeldByTheBudgetOrTheInFlightCap) {
  flow->update_client(false, 4);
  ASSERT_FALSE(client.conn->reading());
  EXPECT_FALSE(partial.held()) << "not a hold for the broker's output (a session does not "
                                  "time a frame waiting behind the cap: it is not scanned)";
  flow->update_client(false, 0);
  BufferBudget budget;
  ctx.budget = &budget;
  client.conn->set_budget(&budget, /*enforce=*/true);
  client.wire->peer_sends("abc");
  client.wire->pump();
  limit_to_what_is_held(budget, *client.conn);
  upstream.stuck_output(200);
  auto charge = std::make_unique<BudgetCharge>(&budget, 100000);
  flow->update_client(false, 0);
  ASSERT_FALSE(client.conn->reading());
  EXPECT_FALSE(partial.held())
      << "over the budget the clock runs, or partial frames could hold it for good";
  charge.reset();
  upstream.peer_takes_all();
  client.conn->set_budget(nullptr, false);
}

TEST_F(FlowControlTest, OverTheBudgetOnlyConnectionsHoldingTheirShareStop) {
  BufferBudget budget;
  ctx.budget = &budget;
  Side quiet{ctx.pool, events};
  PartialFrameClock quiet_partial;
  FlowControl quiet_flow(ctx, *quiet.conn, quiet_partial, 2);
  quiet_flow.attach_upstream(*upstream.conn);
  quiet.conn->start_reading();
  client.conn->set_budget(&budget, true);
  quiet.conn->set_budget(&budget, true);
  client.wire->peer_sends("abc");  // holds a buffer; `quiet` holds nothing
  client.wire->pump();
  limit_to_what_is_held(budget, *client.conn);  // a fair share is half of it
  BudgetCharge charge(&budget, 100000);
  flow->update_client(false, 0);
  quiet_flow.update_client(false, 0);
  EXPECT_FALSE(client.conn->reading());
  EXPECT_TRUE(quiet.conn->reading()) << "one peer filling the budget never stops everyone";
  client.conn->set_budget(nullptr, false);
  quiet.conn->set_budget(nullptr, false);
}

TEST_F(FlowControlTest, NoBuffersPausesForTheBudgetOncePerPause) {
  flow->on_no_buffers(/*client_side=*/true);
  EXPECT_TRUE(flow->budget_paused());
  EXPECT_EQ(rechecks, 1);
  flow->pause_for_budget();
  EXPECT_EQ(rechecks, 2) << "each pause asks for a re-check";
  EXPECT_TRUE(flow->budget_paused());
  flow->update_client(false, 0);
  EXPECT_FALSE(flow->budget_paused()) << "not over the budget: the pause ends";
}

}  // namespace
}  // namespace epochgate::proxy::testing
