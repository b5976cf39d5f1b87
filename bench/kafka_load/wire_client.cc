// bench/kafka_load: raw Kafka frames over blocking sockets.
#include "wire_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

namespace epochgate::bench {
namespace {

constexpr char kClientId[] = "epochgate-bench";

void put16(std::vector<uint8_t>& b, int16_t v) {
  b.push_back(static_cast<uint8_t>(static_cast<uint16_t>(v) >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void put32(std::vector<uint8_t>& b, int32_t v) {
  const auto u = static_cast<uint32_t>(v);
  b.push_back(static_cast<uint8_t>(u >> 24));
  b.push_back(static_cast<uint8_t>(u >> 16));
  b.push_back(static_cast<uint8_t>(u >> 8));
  b.push_back(static_cast<uint8_t>(u));
}

void put_string(std::vector<uint8_t>& b, const std::string& s) {
  put16(b, static_cast<int16_t>(s.size()));
  b.insert(b.end(), s.begin(), s.end());
}

int32_t get32(const uint8_t* p) {
  return static_cast<int32_t>((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) |
                              (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

}  // namespace

WireClient::~WireClient() { close(); }

void WireClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool WireClient::connect(const std::string& host, int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return false;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close();
    return false;
  }
  int one = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval tv{5, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return true;
}

bool WireClient::send_frame(int16_t api_key, int16_t version, const std::vector<uint8_t>& body,
                            bool flexible_header) {
  scratch_.clear();
  put32(scratch_, 0);  // size, patched below
  put16(scratch_, api_key);
  put16(scratch_, version);
  put32(scratch_, next_corr_++);
  put_string(scratch_, kClientId);
  if (flexible_header) scratch_.push_back(0);  // no tagged fields
  scratch_.insert(scratch_.end(), body.begin(), body.end());
  const auto size = static_cast<uint32_t>(scratch_.size() - 4);
  scratch_[0] = static_cast<uint8_t>(size >> 24);
  scratch_[1] = static_cast<uint8_t>(size >> 16);
  scratch_[2] = static_cast<uint8_t>(size >> 8);
  scratch_[3] = static_cast<uint8_t>(size);
  size_t sent = 0;
  while (sent < scratch_.size()) {
    const ssize_t n = ::send(fd_, scratch_.data() + sent, scratch_.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

bool WireClient::send_api_versions() { return send_frame(18, 2, {}); }

bool WireClient::send_metadata(const std::string& topic) {
  std::vector<uint8_t> body;
  put32(body, 1);  // topics array of one
  put_string(body, topic);
  body.push_back(0);  // allow_auto_topic_creation = false
  return send_frame(3, 4, body);
}

bool WireClient::send_metadata_all_v12() {
  // topics: null compact array (varint 0); allow_auto_topic_creation,
  // include_topic_authorized_operations: false; no tagged fields.
  return send_frame(3, 12, {0, 0, 0, 0}, true);
}

bool WireClient::send_metadata_v12(const std::vector<std::string>& topics) {
  std::vector<uint8_t> body;
  auto varint = [&](uint32_t v) {
    for (; v >= 0x80; v >>= 7) body.push_back(static_cast<uint8_t>(v | 0x80));
    body.push_back(static_cast<uint8_t>(v));
  };
  varint(static_cast<uint32_t>(topics.size()) + 1);  // compact array
  for (const auto& t : topics) {
    body.insert(body.end(), 16, 0);  // topic_id: zero (by name)
    varint(static_cast<uint32_t>(t.size()) + 1);  // compact nullable string
    body.insert(body.end(), t.begin(), t.end());
    body.push_back(0);  // no tagged fields
  }
  body.insert(body.end(), {0, 0, 0});  // two false bools, no tagged fields
  return send_frame(3, 12, body, true);
}

bool WireClient::read_exact(uint8_t* out, size_t n) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = ::recv(fd_, out + got, n - got, 0);
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

bool WireClient::read_response() {
  uint8_t head[8];
  if (!read_exact(head, 8)) return false;
  const int32_t size = get32(head);
  if (size < 4 || size > (64 << 20)) return false;
  if (get32(head + 4) != expect_corr_) return false;
  last_response_bytes_ = static_cast<size_t>(size);
  ++expect_corr_;
  std::vector<uint8_t>& rest = scratch_;
  rest.resize(static_cast<size_t>(size) - 4);
  return rest.empty() || read_exact(rest.data(), rest.size());
}

bool ping_pong_interleaved(std::vector<PingTarget>& targets, ProbeRequest req,
                           const std::string& topic, int warmup, int count) {
  std::vector<WireClient> conns(targets.size());
  for (size_t t = 0; t < targets.size(); ++t) {
    if (!conns[t].connect(targets[t].host, targets[t].port)) targets[t].failed = true;
  }
  const size_t n = targets.size();
  for (int i = 0; i < warmup + count; ++i) {
    for (size_t k = 0; k < n; ++k) {
      const size_t t = (k + static_cast<size_t>(i)) % n;
      if (targets[t].failed) continue;
      const auto t0 = std::chrono::steady_clock::now();
      const bool sent = req == ProbeRequest::kApiVersions ? conns[t].send_api_versions()
                                                          : conns[t].send_metadata(topic);
      if (!sent || !conns[t].read_response()) {
        targets[t].failed = true;
        continue;
      }
      const auto t1 = std::chrono::steady_clock::now();
      if (i >= warmup)
        targets[t].out->add_ns(
            std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
    }
  }
  for (const auto& t : targets) {
    if (t.failed) return false;
  }
  return true;
}

int open_idle_connections(const std::string& host, int port, int count,
                          std::vector<WireClient>& out) {
  // One at a time: the mock brokers listen with a backlog of 5, so a burst
  // of connects would measure SYN retransmits instead of the proxy.
  int ok = 0;
  for (int i = 0; i < count; ++i) {
    WireClient c;
    if (c.connect(host, port) && c.send_api_versions() && c.read_response()) {
      ++ok;
      out.push_back(std::move(c));
    }
  }
  return ok;
}

}  // namespace epochgate::bench
