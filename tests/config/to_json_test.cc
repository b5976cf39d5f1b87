// tests/config/to_json_test.cc: /debug/config's JSON mirrors the YAML schema
// and is valid JSON (checked by Python's json module).
#include "config/to_json.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "config/loader.h"

namespace epochgate::config {
namespace {

TEST(ToJsonTest, MirrorsTheSchemaAndParses) {
  const LoadResult r = load_config_string(
      "bootstrap_servers: ['[::1]:9092', 'kafka:9093']\n"
      "broker_ports: {base: 19092, map: {7: 20000}}\n"
      "policy:\n  rules:\n    - {topics: 'a*', apis: [produce], mode: observe}\n",
      "j.yaml");
  ASSERT_TRUE(r.ok()) << r.problems[0].to_string();
  const Config& c = r.config;
  const std::string json = to_json(c);
  EXPECT_EQ(json.rfind("{\"source_file\":\"j.yaml\",\"listen\":\"127.0.0.1:9092\"", 0), 0u) << json;
  EXPECT_NE(json.find("\"bootstrap_servers\":[\"[::1]:9092\",\"kafka:9093\"]"), std::string::npos);
  EXPECT_NE(json.find("\"map\":{\"7\":20000}"), std::string::npos) << json;
  EXPECT_NE(
      json.find("\"rules\":[{\"topics\":\"a*\",\"apis\":[\"produce\"],\"mode\":\"observe\",\"reroute\":false}]"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find("\"default_mode\":\"enforce\""), std::string::npos);
  EXPECT_NE(json.find("\"admin\":{\"enabled\":true,\"listen\":\"127.0.0.1:9644\","
                      "\"max_connections\":64,\"idle_timeout_ms\":5000,\"expose_debug\":false}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"max_listeners\":1024,\"absent_grace_ms\":300000,\"bind_retry_max_ms\":5000"),
            std::string::npos)
      << json;

  const std::string path = ::testing::TempDir() + "/cfg_" + std::to_string(getpid()) + ".json";
  std::ofstream(path) << json;
  const std::string cmd =
      "/usr/bin/python3 -c \"import json,sys; c=json.load(open(sys.argv[1])); "
      "assert set(c) >= {'listen','bootstrap_servers','broker_ports','workers','admin','limits',"
      "'policy','refresher','logging'}\" " +
      path;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace epochgate::config
