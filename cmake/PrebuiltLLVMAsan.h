/*===- PrebuiltLLVMAsan.h - ASan builds against Debian's libLLVM ---------===//
 *
 * Force-included (-include) in the compiler's translation units of a
 * sanitized build (TGC_SANITIZE, TGC_FUZZ). LLVM's headers annotate memory
 * for AddressSanitizer when the including code is built with it: the bump
 * allocator poisons its slabs and unpoisons each allocation. Debian's
 * libLLVM and libMLIR are not built with ASan, so their copies of the same
 * inline functions allocate from slabs our copies poisoned, and every MLIR
 * string attribute reads as a use after poison. Our copies must annotate
 * nothing, as theirs do; ASan still checks every access our code makes.
 *===---------------------------------------------------------------------===*/

#ifndef TGC_PREBUILT_LLVM_ASAN_H
#define TGC_PREBUILT_LLVM_ASAN_H

#include <sanitizer/asan_interface.h>

#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(addr, size) ((void)(addr), (void)(size))
#define __asan_unpoison_memory_region(addr, size) ((void)(addr), (void)(size))

#endif
