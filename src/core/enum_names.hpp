// enum_names.hpp — the names of a small enum, written once: each value's name, the parser with the
// one error message that lists the choices, and the choice list a command-line option offers
// (CLI::IsMember). An enum's table sits beside the enum; its name_of/parse functions and the
// options that take it read the table, so a new value is one row.
//   constexpr auto kModes = core::enum_names<Mode>({{Mode::A, "a"}, {Mode::B, "b"}});
//   kModes.name(Mode::B) == "b";  kModes.parse("c", "--mode") throws core::UsageError
//   "--mode must be a or b, got 'c'";  kModes.names() == {"a", "b"}
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"

namespace microddp::core {

template <typename E>
struct EnumName {
  E value;
  std::string_view name;
};

template <typename E, std::size_t N>
class EnumNames {
 public:
  constexpr explicit EnumNames(const std::array<EnumName<E>, N>& rows) : rows_(rows) {}

  // The value's name; "?" for a value without a row (a cast from a bad integer).
  constexpr std::string_view name(E value) const {
    for (const EnumName<E>& r : rows_) {
      if (r.value == value) return r.name;
    }
    return "?";
  }
  // The value called `name`, or a core::UsageError "WHAT must be a, b or c, got 'NAME'" (what: the
  // option or field, e.g. "--shard").
  E parse(std::string_view name, std::string_view what) const {
    for (const EnumName<E>& r : rows_) {
      if (r.name == name) return r.value;
    }
    throw UsageError(std::string(what) + " must be " + choices() + ", got '" + std::string(name) + "'");
  }
  // "a, b or c".
  std::string choices() const {
    std::string s;
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) s += i + 1 == N ? " or " : ", ";
      s += rows_[i].name;
    }
    return s;
  }
  // The names in row order (a command-line option's choices).
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    for (const EnumName<E>& r : rows_) v.emplace_back(r.name);
    return v;
  }

 private:
  std::array<EnumName<E>, N> rows_;
};

template <typename E, std::size_t N>
constexpr EnumNames<E, N> enum_names(const EnumName<E> (&rows)[N]) {
  std::array<EnumName<E>, N> a{};
  for (std::size_t i = 0; i < N; ++i) a[i] = rows[i];
  return EnumNames<E, N>(a);
}

}  // namespace microddp::core
