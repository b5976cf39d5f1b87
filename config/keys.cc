// config/keys.cc: turns config/keys.def into the KeySpec table. The member
// accessors are generated from the dotted name itself, so a row cannot name
// one key and store another. Never parses values: the loader does.
#include "config/keys.h"

#include <limits>
#include <type_traits>

namespace epochgate::config {
namespace {

// Integer bounds must fit the member they check; a wrong row fails the build.
template <typename T>
constexpr bool fits(uint64_t max) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return max <= static_cast<uint64_t>(std::numeric_limits<T>::max());
  } else {
    return max == 0;
  }
}

#define EG_LEAF_FNS(member)                                                        \
  [](const Config& a, const Config& b) { return a.member == b.member; },           \
      [](const Config& from, Config& to) { to.member = from.member; }

#define EG_KEY(member, kind, def, lo, hi, reload, chart, doc)                              \
  KeySpec{#member, Kind::kind, def, lo, hi, "", Reload::reload, chart, doc,                 \
          [](Config& c) -> FieldPtr {                                                     \
            static_assert(fits<std::remove_reference_t<decltype(c.member)>>(hi),           \
                          #member ": max does not fit its member");                       \
            return &c.member;                                                              \
          },                                                                               \
          EG_LEAF_FNS(member)},
#define EG_CHOICE(member, kind, def, choices, reload, chart, doc)                          \
  KeySpec{#member, Kind::kind, def, 0, 0, choices, Reload::reload, chart, doc,            \
          [](Config& c) -> FieldPtr { return &c.member; }, EG_LEAF_FNS(member)},
#define EG_CUSTOM(member, kind, def, reload, chart, doc) \
  KeySpec{#member, Kind::kind, def, 0, 0, "", Reload::reload, chart, doc, nullptr, EG_LEAF_FNS(member)},
#define EG_SECTION(member, reload, chart, doc) \
  KeySpec{#member, Kind::kSection, "", 0, 0, "", Reload::reload, chart, doc},
#define EG_ITEM(path, kind, def, doc) \
  KeySpec{path, Kind::kind, def, 0, 0, "", Reload::kLive, "config", doc},

const std::vector<KeySpec> kKeys = {
#include "config/keys.def"
};

#undef EG_KEY
#undef EG_CHOICE
#undef EG_CUSTOM
#undef EG_SECTION
#undef EG_ITEM
#undef EG_LEAF_FNS

}  // namespace

std::string_view KeySpec::parent() const {
  const auto cut = path.rfind('.');
  return cut == std::string_view::npos ? std::string_view() : path.substr(0, cut);
}

std::string_view KeySpec::name() const {
  const auto cut = path.rfind('.');
  return cut == std::string_view::npos ? path : path.substr(cut + 1);
}

std::string_view KeySpec::top() const {
  return path.substr(0, path.find_first_of(".["));
}

std::vector<std::string_view> KeySpec::choice_list() const {
  std::vector<std::string_view> out;
  if (kind == Kind::kMode && choices.empty()) return {"enforce", "observe", "off"};
  std::string_view rest = choices;
  while (!rest.empty()) {
    const auto bar = rest.find('|');
    out.push_back(rest.substr(0, bar));
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return out;
}

bool KeySpec::is_integer() const {
  return kind == Kind::kInt || kind == Kind::kPort || kind == Kind::kSize ||
         kind == Kind::kDuration;
}

const std::vector<KeySpec>& config_keys() { return kKeys; }

const KeySpec* find_key(std::string_view path) {
  for (const KeySpec& k : kKeys) {
    if (k.path == path) return &k;
  }
  return nullptr;
}

FieldPtr field_of(const KeySpec& spec, const Config& c) {
  // The accessor only takes an address; nothing is written through it here.
  return spec.field(const_cast<Config&>(c));
}

std::string_view kind_doc_name(Kind k) {
  switch (k) {
    case Kind::kSection: return "map";
    case Kind::kHostPort: return "host:port";
    case Kind::kHost: return "host";
    case Kind::kString: return "string";
    case Kind::kPath: return "path";
    case Kind::kBool: return "boolean";
    case Kind::kInt: return "integer";
    case Kind::kPort: return "port";
    case Kind::kSize: return "size";
    case Kind::kDuration: return "duration";
    case Kind::kMode: return "mode";
    case Kind::kChoice: return "string";
    case Kind::kHostPortList: return "list of host:port, or one comma-separated string";
    case Kind::kPortMap: return "map node id -> port";
    case Kind::kRules: return "list of rules";
    case Kind::kGlob: return "glob";
    case Kind::kApiList: return "list (or one name)";
  }
  return "?";
}

std::string_view kind_schema_type(Kind k) {
  switch (k) {
    case Kind::kSection:
    case Kind::kPortMap: return "object";
    case Kind::kBool: return "boolean";
    case Kind::kInt:
    case Kind::kPort:
    case Kind::kSize:
    case Kind::kDuration: return "integer";
    case Kind::kHostPortList:
    case Kind::kRules:
    case Kind::kApiList: return "array";
    default: return "string";
  }
}

std::string_view kind_name(Kind k) {
  switch (k) {
    case Kind::kSection: return "section";
    case Kind::kHostPort: return "host_port";
    case Kind::kHost: return "host";
    case Kind::kString: return "string";
    case Kind::kPath: return "path";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kPort: return "port";
    case Kind::kSize: return "size";
    case Kind::kDuration: return "duration";
    case Kind::kMode: return "mode";
    case Kind::kChoice: return "choice";
    case Kind::kHostPortList: return "host_port_list";
    case Kind::kPortMap: return "port_map";
    case Kind::kRules: return "rules";
    case Kind::kGlob: return "glob";
    case Kind::kApiList: return "api_list";
  }
  return "?";
}

}  // namespace epochgate::config
