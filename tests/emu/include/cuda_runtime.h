// tests/emu/include/cuda_runtime.h: the CUDA runtime API of the CPU emulation
// (tests/emu/cuda_emu.h says what is emulated and what is not).
#ifndef CPLAB_TESTS_EMU_CUDA_RUNTIME_H
#define CPLAB_TESTS_EMU_CUDA_RUNTIME_H
#include "../cuda_emu.h"
#endif
