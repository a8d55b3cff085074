/* Stub of the Linux kernel's <asm/nops.h> (x86-64) for copysynth's tests (test_asm.cpp): the
 * P6 NOPs of 1..8 bytes (BYTES_NOP1..8 in arch/x86/include/asm/nops.h, the same bytes as
 * copysynth's long NOP form, generator/nops.hpp) and ASM_NOPn, which is `.byte BYTES_NOPn` in
 * assembly (the kernel spells it _ASM_BYTES(BYTES_NOPn)). */
#ifndef COPYSYNTH_STUB_ASM_NOPS_H
#define COPYSYNTH_STUB_ASM_NOPS_H
#define BYTES_NOP1 0x90
#define BYTES_NOP2 0x66,BYTES_NOP1
#define BYTES_NOP3 0x0f,0x1f,0x00
#define BYTES_NOP4 0x0f,0x1f,0x40,0x00
#define BYTES_NOP5 0x0f,0x1f,0x44,0x00,0x00
#define BYTES_NOP6 0x66,BYTES_NOP5
#define BYTES_NOP7 0x0f,0x1f,0x80,0x00,0x00,0x00,0x00
#define BYTES_NOP8 0x0f,0x1f,0x84,0x00,0x00,0x00,0x00,0x00
#define ASM_NOP1 .byte BYTES_NOP1
#define ASM_NOP2 .byte BYTES_NOP2
#define ASM_NOP3 .byte BYTES_NOP3
#define ASM_NOP4 .byte BYTES_NOP4
#define ASM_NOP5 .byte BYTES_NOP5
#define ASM_NOP6 .byte BYTES_NOP6
#define ASM_NOP7 .byte BYTES_NOP7
#define ASM_NOP8 .byte BYTES_NOP8
#endif
