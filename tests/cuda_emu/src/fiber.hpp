// fiber.hpp — fibers: execution contexts with their own stacks, switched explicitly on one OS
// thread. The emulator runs each CUDA thread of a block as a fiber, so a thread that reaches
// __syncthreads() can stop there while the others catch up.
// Contract: switch_context(from, to) saves the running context into `from` and continues `to`;
// it returns when something switches back to `from`. A Fiber, once reset(entry, arg), starts
// entry(arg) on its own stack at the next switch into it; entry must never return (it ends by
// switching away for good). Fiber stacks have a PROT_NONE guard page below them: an overflow is a
// segmentation fault, not silent corruption. The switch is x86-64 assembly (callee-saved registers,
// MXCSR and the x87 control word) or, with CUDA_EMU_CONTEXT_SWITCH=ucontext or on other CPUs,
// swapcontext (which also saves the signal mask: a system call per switch).
#pragma once

#include <ucontext.h>

#include <cstddef>

namespace cuda_emu {

struct ExecutionContext {
  void* stack_pointer = nullptr;  // assembly switch: where the saved registers are
  ucontext_t ucontext{};          // ucontext switch
};

void switch_context(ExecutionContext& from, ExecutionContext& to);

class Fiber {
 public:
  explicit Fiber(std::size_t stack_bytes);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  void reset(void (*entry)(void*), void* arg);
  ExecutionContext& context() { return context_; }

 private:
  static void ucontext_entry(unsigned hi, unsigned lo);

  void* mapping_ = nullptr;
  std::size_t mapping_bytes_ = 0;
  char* stack_base_ = nullptr;  // lowest usable byte (just above the guard page)
  std::size_t stack_bytes_ = 0;
  void (*entry_)(void*) = nullptr;
  void* arg_ = nullptr;
  ExecutionContext context_;
};

}  // namespace cuda_emu
