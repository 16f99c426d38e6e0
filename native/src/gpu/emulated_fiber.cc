#include "emulated_fiber.h"

#include <cstdint>

namespace hcsp::gpu {

#if defined(HCSP_FIBER_X86_64)

// hcsp_fiber_switch(void** save, void* load): pushes what the System V ABI has a callee keep
// (rbp, rbx, r12-r15, MXCSR and the x87 control word), stores rsp in *save, takes load as rsp,
// pops the same from there and returns into the context that pushed them (or, the first time,
// into the entry fiberPrepare placed as the return address).
extern "C" void hcsp_fiber_switch(void** save, void* load);
asm(R"(
  .text
  .globl hcsp_fiber_switch
  .hidden hcsp_fiber_switch
  .type hcsp_fiber_switch, @function
  .p2align 4
hcsp_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size hcsp_fiber_switch, .-hcsp_fiber_switch
)");

void fiberPrepare(FiberContext& fiber, char* stack, size_t bytes, void (*entry)()) {
  auto top = reinterpret_cast<uintptr_t>(stack + bytes) & ~uintptr_t{15};
  void** sp = reinterpret_cast<void**>(top);
  // entry's own return address (it never returns), then the one the switch's ret takes: entry
  // starts with rsp = 8 mod 16, as after a call
  *--sp = nullptr;
  *--sp = reinterpret_cast<void*>(entry);
  for (int r = 0; r < 6; r++) *--sp = nullptr;  // rbp, rbx, r12-r15
  // this thread's MXCSR and x87 control word (the fiber runs as its thread does)
  uint32_t mxcsr;
  uint16_t fcw;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fcw));
  *--sp = nullptr;
  auto* control = reinterpret_cast<uint32_t*>(sp);
  control[0] = mxcsr;
  control[1] = fcw;
  fiber.sp = sp;
}

void fiberSwitch(FiberContext& from, FiberContext& to) { hcsp_fiber_switch(&from.sp, to.sp); }

#else

void fiberPrepare(FiberContext& fiber, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&fiber.context);
  fiber.context.uc_stack.ss_sp = stack;
  fiber.context.uc_stack.ss_size = bytes;
  fiber.context.uc_link = nullptr;
  makecontext(&fiber.context, entry, 0);
}

void fiberSwitch(FiberContext& from, FiberContext& to) { swapcontext(&from.context, &to.context); }

#endif

}  // namespace hcsp::gpu
