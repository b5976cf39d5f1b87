// config/keys_dump_main.cc: epochgate-config-keys prints the key table
// (config/keys.def) and the defaults' /debug/config as one JSON document, for
// tools/config_keys.py, which generates docs/config.md's tables from it and
// checks the Helm chart's values.schema.json against it. Reads nothing.
#include <cstdio>
#include <string>

#include "config/keys.h"
#include "config/to_json.h"
#include "common/json_writer.h"

int main() {
  using namespace epochgate::config;
  epochgate::common::JsonWriter w;
  w.begin_object();
  w.key("keys").begin_array();
  for (const KeySpec& k : config_keys()) {
    w.begin_object();
    w.key("path").value(k.path);
    w.key("kind").value(kind_name(k.kind));
    w.key("doc_type").value(kind_doc_name(k.kind));
    w.key("schema_type").value(kind_schema_type(k.kind));
    w.key("default_text").value(k.default_text);
    if (k.is_integer()) {
      // As text: a uint64 bound does not survive a double.
      w.key("min").value(std::to_string(k.min));
      w.key("max").value(std::to_string(k.max));
    }
    if (k.kind == Kind::kChoice || k.kind == Kind::kMode) {
      w.key("choices").begin_array();
      for (std::string_view c : k.choice_list()) w.value(c);
      w.end_array();
    }
    w.key("reload").value(k.reload == Reload::kLive ? "Live" : "Restart");
    w.key("chart").value(k.chart);
    w.key("doc").value(k.doc);
    w.end_object();
  }
  w.end_array();
  w.key("defaults").raw(to_json(Config{}));
  w.end_object();
  std::fputs(w.take().c_str(), stdout);
  std::fputs("\n", stdout);
  return 0;
}
