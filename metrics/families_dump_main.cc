// metrics/families_dump_main.cc: epochgate-metric-families prints the family
// table (metrics/families.def) as one JSON document, for
// tools/metric_families.py, which generates docs/metrics.md's tables from it
// and checks a running epochgate's /metrics against it. Reads nothing.
#include <cstdio>

#include "common/json_writer.h"
#include "metrics/families.h"

int main() {
  using namespace epochgate::metrics;
  epochgate::common::JsonWriter w;
  w.begin_object();
  w.key("families").begin_array();
  for (const FamilySpec& f : family_table()) {
    w.begin_object();
    w.key("name").value(f.name);
    w.key("type").value(kind_name(f.kind));
    w.key("labels").begin_array();
    for (std::string_view rest = f.labels; !rest.empty();) {
      const auto cut = rest.find(',');
      w.value(rest.substr(0, cut));
      rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + 1);
    }
    w.end_array();
    w.key("section").value(section_name(f.section));
    w.key("at_start").value(f.presence == Presence::kAtStart);
    w.key("help").value(f.help);
    w.key("doc").value(f.doc);
    w.end_object();
  }
  w.end_array();
  w.end_object();
  std::fputs(w.take().c_str(), stdout);
  std::fputs("\n", stdout);
  return 0;
}
