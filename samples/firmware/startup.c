/* Vector table and reset handler for a Cortex-M4F under QEMU (mps2-an386),
 * in front of newlib's rdimon start-up code (_start: zeroes .bss, sets up
 * semihosting stdio, runs constructors, calls main, exits via SYS_EXIT). */
#include <stdint.h>

extern void _start(void);
extern uint32_t __stack;

/* Semihosting SYS_EXIT with ADP_Stopped_RunTimeError: QEMU exits non-zero,
 * so a fault ends the test instead of hanging it. */
__attribute__((noreturn)) static void semihosting_fail(void) {
  for (;;) {
    __asm__ volatile(
        "mov r0, #0x18\n"
        "ldr r1, =0x20023\n"
        "bkpt 0xab\n" ::
            : "r0", "r1", "memory");
  }
}

static void fault_handler(void) { semihosting_fail(); }

/* Kernels compiled for cortex-m4 (hard-float) and newlib use the FPU, which
 * is off at reset: any float instruction before CPACR grants CP10/CP11 access
 * is a UsageFault. This function itself must use no float register. */
__attribute__((noreturn)) void nanort_bm_reset(void) {
  volatile uint32_t* const cpacr = (volatile uint32_t*)0xE000ED88u;
  *cpacr |= 0xFu << 20;
  __asm__ volatile("dsb\n isb" ::: "memory");
  _start();
  semihosting_fail();
}

typedef void (*vector_fn)(void);

/* Initial stack pointer, reset, then NMI, HardFault, MemManage, BusFault,
 * UsageFault; the rest are unused here and point at the fault handler too. */
__attribute__((section(".vectors"), used)) static const vector_fn vectors[16] = {
    (vector_fn)&__stack,
    nanort_bm_reset,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    fault_handler,
    0,
    0,
    0,
    0,
    fault_handler,
    fault_handler,
    0,
    fault_handler,
    fault_handler,
};
