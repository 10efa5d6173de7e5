// lt_refusals.hpp — which cuBLASLt problems the emulated library refuses: a configurable table.
//
// Why: the real cuBLASLt may have no kernel for a problem it accepts by its types (no algorithm from
// cublasLtMatmulAlgoGetHeuristic, CUBLAS_STATUS_NOT_SUPPORTED from cublasLtMatmul with algo = NULL),
// depending on the version, the GPU, the epilogue, the shapes and the pointers' alignment; which ones
// is not documented. The emulator accepts every problem it implements unless the table says
// otherwise, so a test (or a run) can make it refuse the combinations a real library might, and a
// caller's fallback is exercised before a GPU ever refuses anything.
//
// The table (CUDA_EMU_LT_REFUSE, or cudaEmuSetLtRefusals at run time): rules separated by ';', a
// rule being conditions separated by ','; a problem is refused when every condition of some rule
// holds. Conditions:
//   all                         every problem
//   epilogue=NAME               default, relu, bias, relu_bias, bgrada, bgradb
//   compute=32f | tf32          CUBLAS_COMPUTE_32F (fp32 or bf16 operands) | CUBLAS_COMPUTE_32F_FAST_TF32
//   ab=f32 | bf16               the type of A and B
//   dim=1                       m, n or k (column-major, as cuBLASLt sees them) is 1
//   ldd_bytes<N                 D's leading dimension in bytes is below N (e.g. ldd_bytes<16: a
//                               two-class output layer, ld 2, is 8 bytes)
//   align<N                     A, B, C or D is aligned to fewer than N bytes (the heuristic: the
//                               preference's minimum alignments; a call: the pointers)
// e.g. "epilogue=bgradb,compute=tf32;dim=1". Empty: nothing refused (the default).
// Contract: parse_lt_refusals() is pure (false and `why` on a malformed table); lt_refusals() is
// the process's table (from CUDA_EMU_LT_REFUSE at first use; a malformed variable aborts the
// process, as every CUDA_EMU_ setting), read and replaced under a mutex.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuda_emu {

// One cuBLASLt problem as the table sees it (column-major, as cuBLASLt's arguments).
struct LtProblem {
  std::uint32_t epilogue = 1;  // cublasLtEpilogue_t
  bool tf32 = false;           // compute 32F_FAST_TF32
  bool bf16 = false;           // A and B are CUDA_R_16BF (else CUDA_R_32F)
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t ldd_bytes = 0;
  std::uint32_t align_a = 256, align_b = 256, align_c = 256, align_d = 256;  // bytes
};

class LtRefusals {
 public:
  // The first rule `p` matches, as written in the table ("" when none: the problem is accepted).
  std::string match(const LtProblem& p) const;
  bool empty() const { return rules_.empty(); }

 private:
  friend bool parse_lt_refusals(const std::string& spec, LtRefusals& out, std::string& why);
  struct Condition {
    enum class Kind { All, Epilogue, Tf32, Bf16, DimOne, LddBelow, AlignBelow } kind = Kind::All;
    std::int64_t value = 0;  // Epilogue: the enum; Tf32/Bf16: 1 = must hold, 0 = must not; *Below: N
  };
  struct Rule {
    std::string text;
    std::vector<Condition> conditions;
  };
  std::vector<Rule> rules_;
};

bool parse_lt_refusals(const std::string& spec, LtRefusals& out, std::string& why);

// The process's table.
LtRefusals lt_refusals();
// Replaces it; false (unchanged, `why` set) when `spec` is malformed.
bool set_lt_refusals(const std::string& spec, std::string& why);

// The alignment of a pointer, in bytes: its largest power-of-two divisor, at most 256.
std::uint32_t pointer_alignment(const void* p);

}  // namespace cuda_emu
