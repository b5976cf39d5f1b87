// proxy/app/process_limits.cc
#include "proxy/app/process_limits.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace epochgate::proxy {
namespace {

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// One cgroup hierarchy that may carry a limit of one controller: where it
// is mounted, and the process's cgroup below that mount point.
struct Hierarchy {
  bool v2 = false;
  std::string mount_point;  // mountinfo field 5
  std::string rel;          // the process's cgroup under mount_point ("" for the point itself)
};

struct MountEntry {
  std::string root, point, fstype;
  std::vector<std::string> super_options;
};

std::vector<MountEntry> parse_mountinfo(const std::string& text) {
  std::vector<MountEntry> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string w; ls >> w;) f.push_back(w);
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i)
      if (f[i] == "-") {
        dash = i;
        break;
      }
    if (dash == 0 || dash + 3 > f.size()) continue;
    MountEntry e;
    e.root = unescape_octal(f[3]);
    e.point = unescape_octal(f[4]);
    e.fstype = f[dash + 1];
    if (dash + 3 < f.size()) e.super_options = split(f[dash + 3], ',');
    out.push_back(std::move(e));
  }
  return out;
}

// The process's cgroup `path` (as /proc/self/cgroup names it) relative to a
// mount of the hierarchy's directory `mount_root` (mountinfo field 4): a
// container sees its own cgroup mounted as "/", or the host's path under a
// mount of its own subtree. nullopt when the cgroup is not inside what the
// mount shows (another cgroup's subtree, or a path climbing out with "..":
// a cgroup namespace entered from elsewhere), where no file there is ours.
std::optional<std::string> path_under(const std::string& mount_root, const std::string& path) {
  std::string rel;
  if (mount_root == "/") {
    rel = path;
  } else if (path.rfind(mount_root, 0) == 0 &&
             (path.size() == mount_root.size() || path[mount_root.size()] == '/')) {
    rel = path.substr(mount_root.size());
  } else {
    return std::nullopt;
  }
  for (const std::string& part : split(rel, '/'))
    if (part == "..") return std::nullopt;
  if (rel == "/") rel.clear();
  return rel;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  for (const auto& s : v)
    if (s == x) return true;
  return false;
}

std::vector<Hierarchy> hierarchies_of(const std::string& controller, const std::string& cgroup_text,
                                      const std::vector<MountEntry>& mounts) {
  std::vector<Hierarchy> out;
  std::istringstream in(cgroup_text);
  for (std::string line; std::getline(in, line);) {
    // hierarchy-id:controllers:path (the path may itself hold ':').
    const size_t a = line.find(':');
    if (a == std::string::npos) continue;
    const size_t b = line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a);
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string path = line.substr(b + 1);
    const bool v2 = id == "0" && controllers.empty();
    if (!v2 && !has(split(controllers, ','), controller)) continue;
    // The first mount of this hierarchy that shows the process's cgroup
    // (a container may have several, of other cgroups' subtrees too).
    for (const MountEntry& m : mounts) {
      const bool match = v2 ? m.fstype == "cgroup2"
                            : m.fstype == "cgroup" && has(m.super_options, controller);
      if (!match) continue;
      if (auto rel = path_under(m.root, path)) {
        out.push_back(Hierarchy{v2, m.point, *rel});
        break;
      }
    }
  }
  return out;
}

std::optional<long long> parse_integer(const std::string& s) {
  try {
    return std::stoll(s);
  } catch (...) {
    return std::nullopt;
  }
}

// The CPU limit one directory of a hierarchy sets, in CPUs; nullopt for none.
std::optional<double> cpu_limit_in(const std::string& dir, bool v2, std::string* file) {
  if (v2) {
    *file = dir + "/cpu.max";
    auto text = read_text(*file);
    if (!text) return std::nullopt;
    std::istringstream s(*text);
    std::string quota, period;
    s >> quota >> period;
    if (quota == "max") return std::nullopt;
    auto q = parse_integer(quota);
    auto p = parse_integer(period.empty() ? "100000" : period);
    if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;
    return static_cast<double>(*q) / static_cast<double>(*p);
  }
  *file = dir + "/cpu.cfs_quota_us";
  auto quota = read_text(*file);
  auto period = read_text(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  auto q = parse_integer(*quota);
  auto p = parse_integer(*period);
  if (!q || !p || *q <= 0 || *p <= 0) return std::nullopt;  // -1: no limit
  return static_cast<double>(*q) / static_cast<double>(*p);
}

// The memory limit one directory sets, in bytes; nullopt for none.
std::optional<double> memory_limit_in(const std::string& dir, bool v2, std::string* file) {
  *file = dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  auto text = read_text(*file);
  if (!text) return std::nullopt;
  std::istringstream s(*text);
  std::string value;
  s >> value;
  if (value == "max") return std::nullopt;
  auto bytes = parse_integer(value);
  // v1 reports "no limit" as INT64_MAX rounded down to a page.
  if (!bytes || *bytes <= 0 || *bytes >= (1ll << 62)) return std::nullopt;
  return static_cast<double>(*bytes);
}

using LimitIn = std::optional<double> (*)(const std::string& dir, bool v2, std::string* file);

// The lowest limit `read` finds on `controller`'s hierarchies, from the
// process's cgroup up to each mount's root.
std::optional<CgroupLimit> lowest_limit(const std::string& root, const std::string& controller,
                                        LimitIn read) {
  auto cgroup_text = read_text(root + "/proc/self/cgroup");
  auto mountinfo = read_text(root + "/proc/self/mountinfo");
  if (!cgroup_text || !mountinfo) return std::nullopt;
  std::optional<CgroupLimit> best;
  for (const Hierarchy& h : hierarchies_of(controller, *cgroup_text, parse_mountinfo(*mountinfo))) {
    const std::string top = root + h.mount_point;
    std::string dir = top + h.rel;
    while (true) {
      std::string file;
      if (auto v = read(dir, h.v2, &file); v && (!best || *v < best->value))
        best = CgroupLimit{*v, file.substr(root.size())};
      if (dir.size() <= top.size()) break;
      dir.resize(dir.rfind('/'));
      if (dir.size() < top.size()) dir = top;
    }
  }
  return best;
}

}  // namespace

unsigned affinity_cpus() {
  // A mask sized for many CPUs: CPU_SETSIZE (1024) is too few on the largest hosts.
  for (int ncpu = 1024; ncpu <= (1 << 16); ncpu *= 4) {
    cpu_set_t* set = CPU_ALLOC(ncpu);
    if (!set) break;
    const size_t size = CPU_ALLOC_SIZE(ncpu);
    CPU_ZERO_S(size, set);
    if (sched_getaffinity(0, size, set) == 0) {
      const int n = CPU_COUNT_S(size, set);
      CPU_FREE(set);
      if (n > 0) return static_cast<unsigned>(n);
      break;
    }
    CPU_FREE(set);
    if (errno != EINVAL) break;  // EINVAL: the mask is smaller than the kernel's
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

bool cgroups_readable(const std::string& root) {
  return read_text(root + "/proc/self/cgroup").has_value() &&
         read_text(root + "/proc/self/mountinfo").has_value();
}

std::optional<CgroupLimit> cgroup_cpu_limit(const std::string& root) {
  return lowest_limit(root, "cpu", cpu_limit_in);
}

std::optional<CgroupLimit> cgroup_memory_limit(const std::string& root) {
  return lowest_limit(root, "memory", memory_limit_in);
}

unsigned cpus_to_use(unsigned affinity, const std::optional<CgroupLimit>& cpu_limit) {
  unsigned n = std::max(1u, affinity);
  if (cpu_limit && cpu_limit->value > 0) {
    // Rounded up: a 1.5-CPU limit still lets two loops run at once.
    const double up = std::ceil(cpu_limit->value);
    if (up < static_cast<double>(n)) n = std::max(1u, static_cast<unsigned>(up));
  }
  return n;
}

uint64_t buffer_budget_for(const std::optional<CgroupLimit>& memory_limit,
                           uint64_t high_watermark_bytes) {
  uint64_t budget = kDefaultBufferBudgetBytes;
  if (memory_limit && memory_limit->value > 0)
    budget = std::min(budget, static_cast<uint64_t>(memory_limit->value / 2));
  return std::max(budget, high_watermark_bytes);
}

}  // namespace epochgate::proxy
