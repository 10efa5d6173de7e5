// fuzz_target.hpp — what every fuzz target here promises to check.
//
// A target feeds arbitrary bytes to one of our input parsers. The parser's contract is: it
// returns normally, or throws core::UsageError (which the program turns into one message and
// exit code 2). Anything else — another exception type, a crash, a sanitizer report, a hang —
// is a bug, and the target makes it visible by letting it escape (libFuzzer reports an uncaught
// exception as a crash) or by the sanitizers the fuzz build enables.
//
// Targets are built two ways (tests/fuzz/CMakeLists.txt): with clang's libFuzzer for fuzzing
// (preset `fuzz`), and with the normal compiler against standalone_driver.cpp, which replays the
// kept inputs in tests/fuzz/corpus/<target>/ as ctest cases — every crash reproducer we ever
// found stays a regression test in the normal build.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
