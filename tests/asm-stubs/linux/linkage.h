/* Stub of the Linux kernel's <linux/linkage.h> (x86-64) for copysynth's tests (test_asm.cpp):
 * the macros a copysynth linux-flavour .S file uses, as the kernel defines them for a build
 * without CONFIG_X86_KERNEL_IBT (no endbr64 at SYM_FUNC_START) and without return thunks
 * (RET is ret). The real ones: include/linux/linkage.h, arch/x86/include/asm/linkage.h. */
#ifndef COPYSYNTH_STUB_LINUX_LINKAGE_H
#define COPYSYNTH_STUB_LINUX_LINKAGE_H
#define SYM_FUNC_START(name) .globl name ; .type name, @function ; .balign 16, 0x90 ; name:
#define SYM_FUNC_END(name) .size name, .-name
#define RET ret
#endif
