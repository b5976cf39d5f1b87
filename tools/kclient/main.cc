// tools/kclient/main.cc: epochgate-kclient, a command-line driver of
// epochgate's internal Kafka client (proxy/client/kafka_client.h) for tests: it
// reads one command per stdin line and writes one JSON line per event to
// stdout, so a test can act on the broker (mock cluster commands, faults)
// between a request and its answer. Test tooling only; never shipped.
//
//   epochgate-kclient --bootstrap HOST:PORT[,...] [--connect-timeout-ms N]
//                     [--timeout-ms N] [--min-version N] [--max-version N]
//                     [--max-outstanding N] [--request-client-id ID]
// Commands (ID is the caller's tag, echoed back):
//   metadata ID TOPIC[,TOPIC...]          Metadata for the topics ("-": none)
//   produce ID TOPIC PARTITION VALUE ACKS Produce one record (ACKS 0: no answer)
//   @NODE <command>                        the same on the pool's client of node
//                                          NODE (address from the last Metadata)
//   quit                                   closes the clients and exits
// Events: {"accepted":ID} or {"refused":ID,"error":...} per command, then
// {"id":ID,"error":...,"detail":...,"version":V,...} per answer.
#include <uv.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codec/messages/metadata_request.h"
#include "codec/messages/produce_request.h"
#include "config/value_parsers.h"
#include "proxy/client/kafka_client.h"
#include "proxy/client/kafka_client_pool.h"
#include "record_batch.h"

namespace {

using namespace epochgate;  // NOLINT: a test tool's main

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void emit(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

template <class Resp>
std::string head(const std::string& id, const proxy::ClientResult<Resp>& r) {
  return "{\"id\":" + quoted(id) + ",\"error\":" + quoted(proxy::client_error_name(r.error)) +
         ",\"detail\":" + quoted(r.detail) + ",\"version\":" + std::to_string(r.version) +
         ",\"correlation_id\":" + std::to_string(r.correlation_id);
}

struct Tool {
  uv_loop_t* loop = nullptr;
  proxy::BufferPool pool{16 * 1024, 4};
  proxy::KafkaClientOptions options;
  proxy::SendOptions send;
  std::unique_ptr<proxy::KafkaClient> client;
  std::unique_ptr<proxy::KafkaClientPool> nodes;
  std::map<int32_t, config::HostPort> addresses;  // from the last Metadata
  uv_pipe_t in;
  std::string partial;
  bool quitting = false;
  int open = 0;

  void on_metadata(const std::string& id, proxy::ClientResult<codec::MetadataResponse>&& r) {
    std::string out = head(id, r);
    if (r.ok()) {
      out += ",\"brokers\":[";
      for (size_t i = 0; i < r.response.brokers.size(); ++i) {
        const auto& b = r.response.brokers[i];
        addresses[b.node_id] = config::HostPort{b.host, static_cast<uint16_t>(b.port)};
        out += (i ? "," : "") + std::to_string(b.node_id);
      }
      out += "],\"topics\":{";
      for (size_t i = 0; i < r.response.topics.size(); ++i) {
        const auto& t = r.response.topics[i];
        out += (i ? "," : "") + quoted(t.name.value_or("")) +
               ":{\"error_code\":" + std::to_string(t.error_code) + ",\"partitions\":{";
        for (size_t k = 0; k < t.partitions.size(); ++k) {
          const auto& p = t.partitions[k];
          out += (k ? ",\"" : "\"") + std::to_string(p.partition_index) +
                 "\":{\"leader\":" + std::to_string(p.leader_id) +
                 ",\"leader_epoch\":" + std::to_string(p.leader_epoch) +
                 ",\"error_code\":" + std::to_string(p.error_code) + "}";
        }
        out += "}}";
      }
      out += "}";
    }
    emit(out + "}");
  }

  void on_produce(const std::string& id, proxy::ClientResult<codec::ProduceResponse>&& r) {
    std::string out = head(id, r);
    if (r.ok()) {
      out += ",\"partitions\":[";
      bool first = true;
      for (const auto& t : r.response.responses) {
        for (const auto& p : t.partition_responses) {
          out += (first ? "" : ",") + std::string("{\"topic\":") + quoted(t.name) +
                 ",\"partition\":" + std::to_string(p.index) +
                 ",\"error_code\":" + std::to_string(p.error_code) +
                 ",\"base_offset\":" + std::to_string(p.base_offset) + ",\"current_leader\":" +
                 std::to_string(p.current_leader ? p.current_leader->leader_id : -1) + "}";
          first = false;
        }
      }
      out += "]";
    }
    emit(out + "}");
  }

  void accepted(const std::string& id, proxy::ClientError e) {
    if (e == proxy::ClientError::kNone)
      emit("{\"accepted\":" + quoted(id) + "}");
    else
      emit("{\"refused\":" + quoted(id) + ",\"error\":" + quoted(proxy::client_error_name(e)) + "}");
  }

  void command(const std::string& line) {
    std::istringstream words(line);
    std::vector<std::string> a;
    for (std::string w; words >> w;) a.push_back(w);
    if (a.empty()) return;
    proxy::KafkaClient* c = client.get();
    if (a[0][0] == '@') {
      int32_t node = std::atoi(a[0].c_str() + 1);
      auto it = addresses.find(node);
      c = it == addresses.end() ? nullptr : nodes->client(node, it->second);
      a.erase(a.begin());
      if (c == nullptr) {
        emit("{\"refused\":" + quoted(a.size() > 1 ? a[1] : "") + ",\"error\":\"unknown node\"}");
        return;
      }
    }
    if (a.empty()) return;
    if (a[0] == "quit") {
      quit();
    } else if (a[0] == "metadata" && a.size() == 3) {
      codec::MetadataRequest req;
      req.topics.emplace();
      std::stringstream names(a[2]);
      for (std::string n; std::getline(names, n, ',');) {
        if (n == "-" || n.empty()) continue;
        codec::MetadataRequest::MetadataRequestTopic t;
        t.name = n;
        req.topics->push_back(std::move(t));
      }
      req.allow_auto_topic_creation = false;
      std::string id = a[1];
      accepted(id, c->send(std::move(req), send, [this, id](auto&& r) {
        on_metadata(id, std::move(r));
      }));
    } else if (a[0] == "produce" && a.size() == 6) {
      auto batch = std::make_shared<std::vector<uint8_t>>(tools::one_record_batch(
          a[4], std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::system_clock::now().time_since_epoch())
                    .count()));
      codec::ProduceRequest req;
      req.acks = static_cast<int16_t>(std::atoi(a[5].c_str()));
      req.timeout_ms = static_cast<int32_t>(send.timeout_ms);
      codec::ProduceRequest::TopicProduceData t;
      t.name = a[2];
      codec::ProduceRequest::PartitionProduceData p;
      p.index = std::atoi(a[3].c_str());
      p.records = codec::Bytes{batch->data(), static_cast<uint32_t>(batch->size()), false};
      t.partition_data.push_back(p);
      req.topic_data.push_back(std::move(t));
      std::string id = a[1];
      // v13 names topics by id only (KIP-516): this tool names them.
      proxy::SendOptions o = send;
      o.max_version = std::min<int16_t>(o.max_version, 12);
      if (req.acks == 0) {
        accepted(id, c->post(std::move(req), o));
        batches.push_back(batch);  // the views must outlive the write
        return;
      }
      accepted(id, c->send(std::move(req), o, [this, id, batch](auto&& r) {
        on_produce(id, std::move(r));
      }));
    } else {
      emit("{\"refused\":\"\",\"error\":\"bad command\"}");
    }
  }
  std::vector<std::shared_ptr<std::vector<uint8_t>>> batches;

  void quit() {
    if (quitting) return;
    quitting = true;
    open = 3;
    auto done = [this] {
      if (--open == 0) emit("{\"closed\":true}");
    };
    client->close(done);
    nodes->close(done);
    uv_close(reinterpret_cast<uv_handle_t*>(&in), [](uv_handle_t* h) {
      auto* t = static_cast<Tool*>(h->data);
      if (--t->open == 0) emit("{\"closed\":true}");
    });
  }

  static void on_read(uv_stream_t* s, ssize_t n, const uv_buf_t* buf) {
    auto* t = static_cast<Tool*>(s->data);
    if (n > 0) {
      t->partial.append(buf->base, static_cast<size_t>(n));
      size_t at;
      while (!t->quitting && (at = t->partial.find('\n')) != std::string::npos) {
        std::string line = t->partial.substr(0, at);
        t->partial.erase(0, at + 1);
        t->command(line);
      }
    } else if (n < 0) {
      t->quit();  // stdin closed: end like quit
    }
    delete[] buf->base;
  }
};

}  // namespace

int main(int argc, char** argv) {
  Tool t;
  t.loop = uv_default_loop();
  t.options.client_id = "epochgate-kclient";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    std::string v = argv[i + 1];
    if (k == "--bootstrap") {
      std::stringstream list(v);
      for (std::string one; std::getline(list, one, ',');) {
        std::string error;
        auto hp = config::parse_host_port(one, &error);
        if (!hp) {
          std::fprintf(stderr, "bad --bootstrap %s: %s\n", one.c_str(), error.c_str());
          return 2;
        }
        t.options.targets.push_back(*hp);
      }
    } else if (k == "--connect-timeout-ms") {
      t.options.connect_timeout_ms = static_cast<uint32_t>(std::atol(v.c_str()));
    } else if (k == "--timeout-ms") {
      t.send.timeout_ms = static_cast<uint32_t>(std::atol(v.c_str()));
    } else if (k == "--min-version") {
      t.send.min_version = static_cast<int16_t>(std::atoi(v.c_str()));
    } else if (k == "--max-version") {
      t.send.max_version = static_cast<int16_t>(std::atoi(v.c_str()));
    } else if (k == "--request-client-id") {
      t.send.client_id = v;
    } else if (k == "--max-outstanding") {
      t.options.max_outstanding = static_cast<size_t>(std::atol(v.c_str()));
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  t.client = std::make_unique<proxy::KafkaClient>(t.loop, t.pool, t.options);
  t.nodes = std::make_unique<proxy::KafkaClientPool>(t.loop, t.pool, t.options, 64);
  uv_pipe_init(t.loop, &t.in, 0);
  t.in.data = &t;
  uv_pipe_open(&t.in, 0);
  uv_read_start(
      reinterpret_cast<uv_stream_t*>(&t.in),
      [](uv_handle_t*, size_t suggested, uv_buf_t* buf) {
        buf->base = new char[suggested];
        buf->len = suggested;
      },
      &Tool::on_read);
  emit("{\"ready\":true}");
  uv_run(t.loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(t.loop);
  return rc == 0 ? 0 : 1;
}
