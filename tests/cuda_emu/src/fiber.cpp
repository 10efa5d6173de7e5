// fiber.cpp — fiber stacks and the context switch (see fiber.hpp).
#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config.hpp"

#if defined(__x86_64__)
extern "C" void cuda_emu_switch_stack(void** save_sp, void* load_sp);
extern "C" void cuda_emu_fiber_trampoline();
#endif

namespace cuda_emu {

namespace {

bool use_assembly() {
  static const bool assembly = config().context_switch == ContextSwitch::Assembly;
  return assembly;
}

[[noreturn]] void fatal(const char* what) {
  std::fprintf(stderr, "cuda_emu: fiber: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

}  // namespace

void switch_context(ExecutionContext& from, ExecutionContext& to) {
#if defined(__x86_64__)
  if (use_assembly()) {
    cuda_emu_switch_stack(&from.stack_pointer, to.stack_pointer);
    return;
  }
#endif
  if (swapcontext(&from.ucontext, &to.ucontext) != 0) fatal("swapcontext");
}

Fiber::Fiber(std::size_t stack_bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  stack_bytes_ = (stack_bytes + page - 1) / page * page;
  mapping_bytes_ = stack_bytes_ + page;
  // MAP_NORESERVE: only the pages a thread touches become memory.
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping_ == MAP_FAILED) fatal("mmap of a fiber stack");
  if (mprotect(mapping_, page, PROT_NONE) != 0) fatal("mprotect of a fiber stack's guard page");
  stack_base_ = static_cast<char*>(mapping_) + page;
}

Fiber::~Fiber() { munmap(mapping_, mapping_bytes_); }

void Fiber::ucontext_entry(unsigned hi, unsigned lo) {
  auto* self = reinterpret_cast<Fiber*>((static_cast<std::uintptr_t>(hi) << 32) | lo);
  self->entry_(self->arg_);
  std::abort();  // entry must not return
}

void Fiber::reset(void (*entry)(void*), void* arg) {
  entry_ = entry;
  arg_ = arg;
#if defined(__x86_64__)
  if (use_assembly()) {
    // The frame cuda_emu_switch_stack pops (fiber_switch_x86_64.cpp), from the lowest address:
    // MXCSR + x87 control word, r15, r14, r13 = entry, r12 = arg, rbx, rbp, return address =
    // trampoline. After the `ret` the stack pointer is 16-byte aligned, so the trampoline's call
    // enters `entry` with the ABI's alignment.
    constexpr std::uint64_t kMxcsrDefault = 0x1F80;       // all exceptions masked, round to nearest
    constexpr std::uint64_t kX87ControlDefault = 0x037F;  // the x87 default (extended precision)
    auto top = reinterpret_cast<std::uintptr_t>(stack_base_ + stack_bytes_) & ~std::uintptr_t{15};
    auto* frame = reinterpret_cast<std::uint64_t*>(top - 16 - 64);
    frame[0] = kMxcsrDefault | (kX87ControlDefault << 32);
    frame[1] = 0;                                       // r15
    frame[2] = 0;                                       // r14
    frame[3] = reinterpret_cast<std::uint64_t>(entry);  // r13
    frame[4] = reinterpret_cast<std::uint64_t>(arg);    // r12
    frame[5] = 0;                                       // rbx
    frame[6] = 0;                                       // rbp
    frame[7] = reinterpret_cast<std::uint64_t>(&cuda_emu_fiber_trampoline);
    context_.stack_pointer = frame;
    return;
  }
#endif
  if (getcontext(&context_.ucontext) != 0) fatal("getcontext");
  context_.ucontext.uc_stack.ss_sp = stack_base_;
  context_.ucontext.uc_stack.ss_size = stack_bytes_;
  context_.ucontext.uc_link = nullptr;
  const auto self = reinterpret_cast<std::uintptr_t>(this);
  // makecontext passes int arguments: the pointer travels as two 32-bit halves.
  makecontext(&context_.ucontext, reinterpret_cast<void (*)()>(&Fiber::ucontext_entry), 2,
              static_cast<unsigned>(self >> 32), static_cast<unsigned>(self & 0xffffffffu));
}

}  // namespace cuda_emu
