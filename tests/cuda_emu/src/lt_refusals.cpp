// lt_refusals.cpp — the refusal table of the emulated cuBLASLt (lt_refusals.hpp).
#include "lt_refusals.hpp"

#include <cublasLt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace cuda_emu {

namespace {

std::string trim(const std::string& s) {
  const std::size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(trim(item));
  return out;
}

bool positive_number(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 9) return false;
  out = std::stoll(s);
  return out > 0;
}

bool epilogue_named(const std::string& name, std::int64_t& out) {
  struct Known {
    const char* name;
    cublasLtEpilogue_t value;
  };
  static constexpr Known kKnown[] = {{"default", CUBLASLT_EPILOGUE_DEFAULT}, {"relu", CUBLASLT_EPILOGUE_RELU},
                                     {"bias", CUBLASLT_EPILOGUE_BIAS},       {"relu_bias", CUBLASLT_EPILOGUE_RELU_BIAS},
                                     {"bgrada", CUBLASLT_EPILOGUE_BGRADA},   {"bgradb", CUBLASLT_EPILOGUE_BGRADB}};
  for (const Known& k : kKnown) {
    if (name == k.name) {
      out = static_cast<std::int64_t>(k.value);
      return true;
    }
  }
  return false;
}

std::mutex& table_mutex() {
  static auto* m = new std::mutex();
  return *m;
}

// Never destroyed: stream workers and other threads may still read it while the process exits.
LtRefusals& table_locked() {
  static auto* t = [] {
    auto* table = new LtRefusals();
    if (const char* v = std::getenv("CUDA_EMU_LT_REFUSE"); v != nullptr && v[0] != '\0') {
      std::string why;
      if (!parse_lt_refusals(v, *table, why)) {
        std::fprintf(stderr, "cuda_emu: CUDA_EMU_LT_REFUSE=\"%s\" is not valid: %s\n", v, why.c_str());
        std::abort();
      }
    }
    return table;
  }();
  return *t;
}

}  // namespace

std::string LtRefusals::match(const LtProblem& p) const {
  for (const Rule& r : rules_) {
    bool all = true;
    for (const Condition& c : r.conditions) {
      bool holds = false;
      switch (c.kind) {
        case Condition::Kind::All:
          holds = true;
          break;
        case Condition::Kind::Epilogue:
          holds = p.epilogue == static_cast<std::uint32_t>(c.value);
          break;
        case Condition::Kind::Tf32:
          holds = p.tf32 == (c.value != 0);
          break;
        case Condition::Kind::Bf16:
          holds = p.bf16 == (c.value != 0);
          break;
        case Condition::Kind::DimOne:
          holds = p.m == 1 || p.n == 1 || p.k == 1;
          break;
        case Condition::Kind::LddBelow:
          holds = p.ldd_bytes < c.value;
          break;
        case Condition::Kind::AlignBelow:
          holds = p.align_a < c.value || p.align_b < c.value || p.align_c < c.value || p.align_d < c.value;
          break;
      }
      if (!holds) {
        all = false;
        break;
      }
    }
    if (all) return r.text;
  }
  return {};
}

bool parse_lt_refusals(const std::string& spec, LtRefusals& out, std::string& why) {
  LtRefusals table;
  for (const std::string& rule_text : split(spec, ';')) {
    if (rule_text.empty()) continue;
    LtRefusals::Rule rule;
    rule.text = rule_text;
    for (const std::string& cond : split(rule_text, ',')) {
      LtRefusals::Condition c;
      using Kind = LtRefusals::Condition::Kind;
      std::int64_t n = 0;
      if (cond == "all") {
        c.kind = Kind::All;
      } else if (cond.rfind("epilogue=", 0) == 0 && epilogue_named(cond.substr(9), n)) {
        c = {Kind::Epilogue, n};
      } else if (cond == "compute=32f" || cond == "compute=tf32") {
        c = {Kind::Tf32, cond == "compute=tf32" ? 1 : 0};
      } else if (cond == "ab=f32" || cond == "ab=bf16") {
        c = {Kind::Bf16, cond == "ab=bf16" ? 1 : 0};
      } else if (cond == "dim=1") {
        c.kind = Kind::DimOne;
      } else if (cond.rfind("ldd_bytes<", 0) == 0 && positive_number(cond.substr(10), n)) {
        c = {Kind::LddBelow, n};
      } else if (cond.rfind("align<", 0) == 0 && positive_number(cond.substr(6), n)) {
        c = {Kind::AlignBelow, n};
      } else {
        why = "unknown condition '" + cond +
              "' (all, epilogue=default|relu|bias|relu_bias|bgrada|bgradb, compute=32f|tf32, ab=f32|bf16, dim=1, "
              "ldd_bytes<N, align<N)";
        return false;
      }
      rule.conditions.push_back(c);
    }
    table.rules_.push_back(std::move(rule));
  }
  out = std::move(table);
  return true;
}

LtRefusals lt_refusals() {
  const std::lock_guard<std::mutex> lock(table_mutex());
  return table_locked();
}

bool set_lt_refusals(const std::string& spec, std::string& why) {
  const std::lock_guard<std::mutex> lock(table_mutex());
  LtRefusals parsed;
  if (!parse_lt_refusals(spec, parsed, why)) return false;
  table_locked() = std::move(parsed);
  return true;
}

std::uint32_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  if (a == 0) return 256;
  std::uint32_t align = 1;
  while (align < 256 && (a & align) == 0) align <<= 1;
  return align;
}

}  // namespace cuda_emu
