// npy_file.cpp — the header's dict literal parsed by hand (a few dozen bytes of a known shape),
// the sizes checked before anything is allocated, big-endian elements swapped.
#include "io/npy_file.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "core/error.hpp"

namespace microddp::io {

namespace {

// A cursor over the dict literal; every failure names the source and the position.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& what) : s_(text), what_(what) {}

  void skip_space() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool at(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!at(c)) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  bool consume(char c) {
    if (!at(c)) return false;
    ++i_;
    return true;
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
    const char q = s_[i_++];
    const std::size_t end = s_.find(q, i_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string v(s_.substr(i_, end - i_));
    i_ = end + 1;
    return v;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (s_.substr(i_, n) == word) {
        i_ += n;
        return value;
      }
    }
    fail("expected True or False");
    return false;
  }
  std::int64_t integer() {
    skip_space();
    std::int64_t v = 0;
    const std::size_t begin = i_;
    while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
      const int d = s_[i_++] - '0';
      if (v > (INT64_MAX - d) / 10) fail("a dimension beyond 2^63");
      v = v * 10 + d;
    }
    if (i_ == begin) fail("expected a dimension (an integer >= 0)");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2's long literal, as old numpy wrote it
    return v;
  }
  bool done() {
    skip_space();
    return i_ == s_.size();
  }
  [[noreturn]] void fail(const std::string& why) const {
    std::ostringstream os;
    os << what_ << ": malformed .npy header at byte " << i_ << " of its dict (" << why << "): '"
       << std::string(s_.substr(0, std::min<std::size_t>(s_.size(), 200))) << "'";
    core::throw_usage_error(os.str());
  }

 private:
  std::string_view s_;
  const std::string& what_;
  std::size_t i_ = 0;
};

NpyDtype parse_descr(const std::string& d, const std::string& what) {
  NpyDtype t;
  t.descr = d;
  const bool ok = d.size() >= 3 && std::strchr("<>|=", d[0]) != nullptr && std::strchr("fiub", d[1]) != nullptr &&
                  d.size() <= 4;
  int bytes = 0;
  if (ok) {
    for (std::size_t k = 2; k < d.size(); ++k) {
      if (!std::isdigit(static_cast<unsigned char>(d[k]))) bytes = -1;
      if (bytes >= 0) bytes = bytes * 10 + (d[k] - '0');
    }
  }
  const char kind = ok ? d[1] : '?';
  const bool size_ok = (kind == 'f' && (bytes == 4 || bytes == 8)) ||
                       ((kind == 'i' || kind == 'u') && (bytes == 1 || bytes == 2 || bytes == 4 || bytes == 8)) ||
                       (kind == 'b' && bytes == 1);
  MDDP_USAGE_CHECK(ok && size_ok, what << ": dtype '" << d
                                       << "' is not one this import reads (float32/float64, int8..int64, uint8..uint64, "
                                          "bool; no complex, strings, objects, dates or records)");
  t.kind = kind;
  t.bytes = bytes;
  // '=' is the writer's native order; numpy writes '<' or '>' for it, and every host we run on is
  // little-endian.
  t.big_endian = d[0] == '>';
  return t;
}

}  // namespace

std::string NpyDtype::name() const {
  switch (kind) {
    case 'f':
      return "float" + std::to_string(8 * bytes);
    case 'i':
      return "int" + std::to_string(8 * bytes);
    case 'u':
      return "uint" + std::to_string(8 * bytes);
    default:
      return "bool";
  }
}

std::string NpyHeader::shape_text() const {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader parse_npy_dict(std::string_view dict, const std::string& what) {
  DictParser p(dict, what);
  NpyHeader h;
  bool have_descr = false, have_order = false, have_shape = false;
  p.expect('{');
  while (!p.at('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      if (p.at('[')) p.fail("a structured dtype (a list of fields): save a plain numeric array");
      h.dtype = parse_descr(p.string_literal(), what);
      have_descr = true;
    } else if (key == "fortran_order") {
      h.fortran_order = p.boolean();
      have_order = true;
    } else if (key == "shape") {
      p.expect('(');
      while (!p.at(')')) {
        h.shape.push_back(p.integer());
        if (h.shape.size() > 32) p.fail("more than 32 dimensions");
        if (!p.consume(',')) break;
      }
      p.expect(')');
      have_shape = true;
    } else {
      p.fail("unknown key '" + key + "'");
    }
    if (!p.consume(',')) break;
  }
  p.expect('}');
  if (!p.done()) p.fail("text after the dict");
  MDDP_USAGE_CHECK(have_descr && have_order && have_shape,
                   what << ": .npy header lacks " << (!have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'"));
  MDDP_USAGE_CHECK(!h.fortran_order || h.shape.size() <= 1,
                   what << ": fortran_order True (column-major) " << h.shape_text()
                        << " array: save np.ascontiguousarray(a) instead");
  h.count = 1;
  for (const std::int64_t d : h.shape) {
    MDDP_USAGE_CHECK(d == 0 || h.count <= INT64_MAX / 8 / d,
                     what << ": shape " << h.shape_text() << " holds more elements than a file can");
    h.count *= d;
  }
  h.data_bytes = h.count * h.dtype.bytes;
  return h;
}

NpyReader::NpyReader(std::unique_ptr<ByteSource> source) : source_(std::move(source)) {
  const std::string& what = source_->name();
  unsigned char pre[10];
  MDDP_USAGE_CHECK(source_->size() >= 10, what << ": " << source_->size() << " bytes: too short for a .npy file");
  source_->read(pre, 10);
  MDDP_USAGE_CHECK(std::memcmp(pre, "\x93NUMPY", 6) == 0,
                   what << ": not a .npy file (no \\x93NUMPY magic at its start; np.save writes one)");
  header_.major = pre[6];
  header_.minor = pre[7];
  MDDP_USAGE_CHECK(header_.major >= 1 && header_.major <= 3 && header_.minor == 0,
                   what << ": .npy format version " << header_.major << "." << header_.minor
                        << ", this reader knows 1.0, 2.0 and 3.0");
  std::int64_t len = pre[8] | (pre[9] << 8), prefix = 10;
  if (header_.major >= 2) {
    unsigned char more[2];
    source_->read(more, 2);
    len |= (static_cast<std::int64_t>(more[0]) << 16) | (static_cast<std::int64_t>(more[1]) << 24);
    prefix = 12;
  }
  MDDP_USAGE_CHECK(len <= kMaxNpyHeaderBytes, what << ": .npy header of " << len << " bytes (more than "
                                                   << kMaxNpyHeaderBytes << ": not a header numpy writes)");
  MDDP_USAGE_CHECK(len <= source_->size() - prefix,
                   what << ": truncated: the header length says " << len << " bytes, the file holds "
                        << source_->size() - prefix << " after the length field");
  std::string dict(static_cast<std::size_t>(len), '\0');
  source_->read(dict.data(), len);
  // The dict ends with '\n' and is padded with spaces before it (the parser skips both).
  header_ = [&] {
    NpyHeader h = parse_npy_dict(dict, what);
    h.major = header_.major;
    h.minor = header_.minor;
    return h;
  }();
  header_.header_bytes = prefix + len;
  const std::int64_t data = source_->size() - header_.header_bytes;
  MDDP_USAGE_CHECK(data >= header_.data_bytes, what << ": truncated: the header (" << header_.dtype.descr << ", shape "
                                                    << header_.shape_text() << ") promises " << header_.data_bytes
                                                    << " bytes of data, the file holds " << data);
  MDDP_USAGE_CHECK(data == header_.data_bytes, what << ": " << data - header_.data_bytes
                                                    << " extra bytes after the data its header ("
                                                    << header_.dtype.descr << ", shape " << header_.shape_text()
                                                    << ") describes");
}

void NpyReader::read(std::int64_t n, void* dst) {
  MDDP_CHECK(n >= 0 && n <= header_.count - read_,
             name() << ": read of " << n << " elements after " << read_ << " of " << header_.count);
  const int b = header_.dtype.bytes;
  source_->read(dst, n * b);
  read_ += n;
  if (header_.dtype.big_endian && b > 1) {
    auto* p = static_cast<unsigned char*>(dst);
    for (std::int64_t i = 0; i < n; ++i) std::reverse(p + i * b, p + (i + 1) * b);
  }
}

}  // namespace microddp::io
