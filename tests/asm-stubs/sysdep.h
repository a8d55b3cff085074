/* Stub of glibc's <sysdep.h> (x86-64) for copysynth's tests (test_asm.cpp): the macros a
 * copysynth glibc-flavour .S file uses, as glibc defines them for a build without CET
 * (_CET_ENDBR empty) and without profiling (CALL_MCOUNT empty). The real ones:
 * sysdeps/x86/sysdep.h and sysdeps/x86_64/sysdep.h (ENTRY_P2ALIGN: glibc 2.35 and later). */
#ifndef COPYSYNTH_STUB_SYSDEP_H
#define COPYSYNTH_STUB_SYSDEP_H
#define ENTRY_P2ALIGN(name, alignment) \
  .globl name ; .type name, @function ; .p2align alignment ; name: ; .cfi_startproc
#define ENTRY(name) ENTRY_P2ALIGN (name, 4)
#define END(name) .cfi_endproc ; .size name, .-name
#define L(name) .L##name
#endif
