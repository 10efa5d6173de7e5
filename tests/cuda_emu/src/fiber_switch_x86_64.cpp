// fiber_switch_x86_64.cpp — the assembly context switch of fiber.hpp (x86-64 System V ABI only).
//   void cuda_emu_switch_stack(void** save_sp, void* load_sp)
// pushes the callee-saved registers (rbp, rbx, r12-r15) and the MXCSR / x87 control words (also
// callee-saved under the ABI) on the running stack, stores the stack pointer in *save_sp, loads
// load_sp and pops the same frame from there, then returns into the other context. Everything else
// is caller-saved, so the compiler already spills what it needs around the call.
//   cuda_emu_fiber_trampoline
// is where a fresh fiber "returns" to: its initial frame (Fiber::reset) holds the entry function in
// r13 and its argument in r12. .cfi_undefined rip ends backtraces there (gdb, the unwinder).
#if defined(__x86_64__)

__asm__(
    ".text\n"
    ".globl cuda_emu_switch_stack\n"
    ".hidden cuda_emu_switch_stack\n"
    ".type cuda_emu_switch_stack, @function\n"
    ".p2align 4\n"
    "cuda_emu_switch_stack:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  subq $8, %rsp\n"
    "  stmxcsr (%rsp)\n"
    "  fnstcw 4(%rsp)\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  ldmxcsr (%rsp)\n"
    "  fldcw 4(%rsp)\n"
    "  addq $8, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size cuda_emu_switch_stack, .-cuda_emu_switch_stack\n"
    "\n"
    ".globl cuda_emu_fiber_trampoline\n"
    ".hidden cuda_emu_fiber_trampoline\n"
    ".type cuda_emu_fiber_trampoline, @function\n"
    ".p2align 4\n"
    "cuda_emu_fiber_trampoline:\n"
    "  .cfi_startproc\n"
    "  .cfi_undefined rip\n"
    "  movq %r12, %rdi\n"
    "  callq *%r13\n"
    "  ud2\n"  // entry never returns
    "  .cfi_endproc\n"
    ".size cuda_emu_fiber_trampoline, .-cuda_emu_fiber_trampoline\n");

#endif
