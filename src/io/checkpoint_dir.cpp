// checkpoint_dir.cpp — checkpoint names, directory listing, retention.
#include "io/checkpoint_dir.hpp"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <utility>

#include "io/atomic_file.hpp"

namespace microddp::io {

namespace {

// ckpt_<10 digits>.h5 exactly.
bool parse_checkpoint_name(const std::string& name, std::int64_t& step) {
  if (name.size() != 5 + 10 + 3 || name.rfind("ckpt_", 0) != 0 || name.substr(15) != ".h5") return false;
  step = 0;
  for (std::size_t i = 5; i < 15; ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
    step = step * 10 + (name[i] - '0');
  }
  return true;
}

std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (const dirent* e = ::readdir(d)) names.emplace_back(e->d_name);
  ::closedir(d);
  return names;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt_%010lld.h5", static_cast<long long>(step));
  return (dir.empty() ? std::string(".") : dir) + "/" + name;
}

std::string best_checkpoint_path(const std::string& dir) {
  return (dir.empty() ? std::string(".") : dir) + "/best.h5";
}

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<std::int64_t, std::string>> found;
  for (const auto& n : list_dir(dir)) {
    std::int64_t step = 0;
    if (parse_checkpoint_name(n, step)) found.emplace_back(step, dir + "/" + n);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::vector<std::string> remove_beyond_keep(const std::string& dir, int keep, const std::string& newest,
                                            const std::function<bool(const std::string&)>& ours,
                                            const std::function<void()>& after_first) {
  std::vector<std::string> deleted;
  std::vector<std::string> mine;
  for (auto& p : list_checkpoints(dir)) {
    if (ours(p)) mine.push_back(std::move(p));
  }
  for (std::size_t i = static_cast<std::size_t>(keep); i < mine.size(); ++i) {
    if (mine[i] == newest) continue;
    if (std::remove(mine[i].c_str()) == 0) deleted.push_back(mine[i]);
    if (i == static_cast<std::size_t>(keep) && after_first) after_first();
  }
  return deleted;
}

void remove_stale_temporaries(const std::string& dir) {
  const std::string suffix = temp_path("");  // ".tmp"
  for (const auto& n : list_dir(dir)) {
    std::int64_t step = 0;
    if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0 &&
        parse_checkpoint_name(n.substr(0, n.size() - suffix.size()), step)) {
      std::remove((dir + "/" + n).c_str());
    }
  }
}

}  // namespace microddp::io
