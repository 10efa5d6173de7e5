// control.cpp — the test controls of cuda_emu/control.h.
#include "cuda_emu/control.h"

#include <cstdio>
#include <cstring>
#include <string>

#include "config.hpp"
#include "errors.hpp"
#include "lt_refusals.hpp"

extern "C" {

int cudaEmuSetSchedule(const char* spec) {
  if (spec == nullptr) return -1;
  cuda_emu::Tuning probe;  // parse into a scratch copy: a malformed spec changes nothing
  if (!cuda_emu::parse_schedule(spec, probe)) return -1;
  cuda_emu::Tuning& t = cuda_emu::tuning();
  t.seed = probe.seed.load();
  t.schedule = probe.schedule.load();
  return 0;
}

void cudaEmuSetGridCap(unsigned cap) { cuda_emu::tuning().grid_cap = cap; }

void cudaEmuSetStreamDelayUs(unsigned us) { cuda_emu::tuning().stream_delay_us = us; }

int cudaEmuSetLtRefusals(const char* table) {
  std::string why;
  if (table != nullptr && cuda_emu::set_lt_refusals(table, why)) return 0;
  std::fprintf(stderr, "cuda_emu: cudaEmuSetLtRefusals: %s\n", table == nullptr ? "null table" : why.c_str());
  return -1;
}

size_t cudaEmuFaultMessage(char* buf, size_t size) {
  const std::string m = cuda_emu::first_fault_message();
  if (size > 0) {
    const std::size_t n = m.size() < size - 1 ? m.size() : size - 1;
    std::memcpy(buf, m.data(), n);
    buf[n] = '\0';
  }
  return m.size();
}

void cudaEmuClearFaults(void) { cuda_emu::clear_faults(); }

}  // extern "C"
