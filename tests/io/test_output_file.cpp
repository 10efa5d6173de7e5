// test_output_file.cpp — io::OutputFile and its checks (io/output_file.hpp), on files made here:
//   * an input is refused under every name it has (itself, "./x", "dir/../x", a hard link), and so
//     is an output whose temporary is an input; a checkpoint is refused by content and by name; a
//     directory, a missing or non-directory parent, an empty name are refused; each a UsageError;
//   * an ordinary existing file is replaced, and only on publish();
//   * a failure before publish() leaves the previous file and no temporary, also when the write
//     itself fails (a file-size limit makes the disk "full" for this process);
//   * the free-space check refuses what no disk holds.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "core/error.hpp"
#include "io/checkpoint_schema.hpp"
#include "io/h5_util.hpp"
#include "io/hdf5_check.hpp"
#include "io/output_file.hpp"

namespace microddp::io {
namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/test_output_file_XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    path = d != nullptr ? d : "";
  }
  ~TempDir() {
    if (!path.empty()) std::filesystem::remove_all(path);
  }
};

void write_text(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
bool exists(const std::string& path) { return std::filesystem::exists(path); }

// The UsageError's message, or "" when none was thrown.
template <typename F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const core::UsageError& e) {
    return e.what();
  }
  return "";
}
#define EXPECT_REFUSED(expr, part)                                           \
  do {                                                                       \
    const std::string m_ = refusal([&] { expr; });                           \
    EXPECT_NE(m_.find(part), std::string::npos) << #expr << ": '" << m_ << "'"; \
  } while (0)

// An HDF5 file whose root says it is a checkpoint (the content is_checkpoint_file looks at).
void write_fake_checkpoint(const std::string& path) {
  hdf5_quiet();
  Hid f(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT));
  ASSERT_TRUE(f.valid());
  write_attr(f, "format", std::string(kCheckpointFormat));
}

TEST(OutputFile, AnInputIsRefusedUnderEveryName) {
  TempDir t;
  const std::string in = t.path + "/in.h5";
  write_text(in, "data");
  ASSERT_EQ(::link(in.c_str(), (t.path + "/hard.h5").c_str()), 0);
  const OutputRules rules{"OUT", {in}};
  for (const std::string& name : {in, t.path + "/./in.h5", t.path + "/../" +
                                      std::filesystem::path(t.path).filename().string() + "/in.h5",
                                  t.path + "/hard.h5"}) {
    EXPECT_REFUSED(check_output_path(name, rules), "is the input " + in);
    EXPECT_REFUSED(OutputFile(name, rules), "is the input");
  }
  // Its temporary is an input: writing OUT would first truncate that input.
  write_text(t.path + "/x.tmp", "input");
  EXPECT_REFUSED(check_output_path(t.path + "/x", {"OUT", {t.path + "/x.tmp"}}), "its temporary");
  EXPECT_EQ(read_text(in), "data");
  EXPECT_EQ(read_text(t.path + "/x.tmp"), "input");
  // An input that does not exist is no reason to refuse.
  EXPECT_EQ(refusal([&] { check_output_path(t.path + "/new.h5", {"OUT", {t.path + "/none"}}); }), "");
}

TEST(OutputFile, ACheckpointIsRefusedByContentAndByName) {
  TempDir t;
  write_fake_checkpoint(t.path + "/best.h5");
  EXPECT_TRUE(is_checkpoint_file(t.path + "/best.h5"));
  EXPECT_REFUSED(check_output_path(t.path + "/best.h5", {"OUT", {}}), "is a checkpoint");
  EXPECT_REFUSED(check_output_path(t.path + "/ckpt_0000000100.h5", {"OUT", {}}), "named like a checkpoint");
  // Not a checkpoint: another HDF5 file, a text file, a name that only resembles one.
  hdf5_quiet();
  { Hid f(H5Fcreate((t.path + "/data.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT)); }
  write_text(t.path + "/text.h5", "not hdf5");
  for (const char* name : {"/data.h5", "/text.h5", "/ckpt_100.h5", "/ckpt_0000000100.h5.bak"}) {
    EXPECT_FALSE(is_checkpoint_file(t.path + name)) << name;
    EXPECT_EQ(refusal([&] { check_output_path(t.path + name, {"OUT", {}}); }), "") << name;
  }
}

TEST(OutputFile, PlacesThatCannotHoldTheFileAreRefused) {
  TempDir t;
  EXPECT_REFUSED(check_output_path("", {"OUT", {}}), "OUT: an empty file name");
  EXPECT_REFUSED(check_output_path(t.path, {"OUT", {}}), "is a directory");
  EXPECT_REFUSED(check_output_path(t.path + "/", {"OUT", {}}), "a directory name");
  EXPECT_REFUSED(check_output_path(t.path + "/none/x.h5", {"OUT", {}}), "its directory " + t.path + "/none");
  write_text(t.path + "/file", "");
  EXPECT_REFUSED(check_output_path(t.path + "/file/x.h5", {"OUT", {}}), "is not a directory");
  EXPECT_REFUSED(check_free_space(t.path + "/x.h5", INT64_MAX, "OUT"), "would take 8.00 EiB");
  EXPECT_EQ(refusal([&] { check_free_space(t.path + "/x.h5", 1, "OUT"); }), "");
  EXPECT_REFUSED(check_distinct_outputs(t.path + "/a.h5", t.path + "/./a.h5", "TRAIN and VAL"), "the same file");
  EXPECT_EQ(refusal([&] { check_distinct_outputs(t.path + "/a.h5", t.path + "/b.h5", "TRAIN and VAL"); }), "");
  EXPECT_FALSE(exists(t.path + "/none"));
}

TEST(OutputFile, ReplacesOnlyOnPublish) {
  TempDir t;
  const std::string out = t.path + "/out.txt";
  write_text(out, "previous");
  {
    OutputFile f(out, {"OUT", {}});
    EXPECT_EQ(f.temp(), out + ".tmp");
    EXPECT_TRUE(exists(f.temp()));
    write_text(f.temp(), "new");
    EXPECT_EQ(read_text(out), "previous");
    f.publish();
  }
  EXPECT_EQ(read_text(out), "new");
  EXPECT_FALSE(exists(out + ".tmp"));
}

TEST(OutputFile, AFailedWriteLeavesThePreviousFileAndNoTemporary) {
  TempDir t;
  const std::string out = t.path + "/out.txt";
  write_text(out, "previous");
  // A file-size limit makes every write past 4 KiB fail with EFBIG, as a full disk fails with
  // ENOSPC (SIGXFSZ ignored, so the write returns the error instead of ending the process).
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGXFSZ, &ignore, &old), 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  bool write_failed = false;
  try {
    OutputFile f(out, {"OUT", {}});
    std::FILE* fp = std::fopen(f.temp().c_str(), "w");
    ASSERT_NE(fp, nullptr);
    const std::string block(1024, 'x');
    for (int i = 0; i < 64 && !write_failed; ++i) write_failed = std::fputs(block.c_str(), fp) == EOF;
    write_failed = (std::fclose(fp) != 0) || write_failed;
    if (write_failed) throw core::UsageError("write failed");
    f.publish();
  } catch (const core::UsageError&) {
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  ::sigaction(SIGXFSZ, &old, nullptr);
  EXPECT_TRUE(write_failed);
  EXPECT_EQ(read_text(out), "previous");
  EXPECT_FALSE(exists(out + ".tmp"));
}

}  // namespace
}  // namespace microddp::io
