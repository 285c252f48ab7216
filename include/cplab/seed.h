/* cplab/seed.h: deriving independent 32-bit GSL seeds from the scenario seed.
 * mt19937 keeps only 32 bits of its seed; splitmix64 folds all 64 bits of
 * (seed, stream) into them, so every stream (workload, block ids of step s,
 * ...) differs and none depends on how many ranks or processes run. */
#ifndef CPLAB_SEED_H
#define CPLAB_SEED_H

#include <stdint.h>

static inline uint64_t cplab_splitmix64(uint64_t z) {
  z += UINT64_C(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
  return z ^ (z >> 31);
}

/* Streams in use: 0 the workload generator, 1 + s the block ids of step s,
 * CPLAB_SEED_STREAM_SAMPLE + s the tokens the numeric pass samples in step s. */
#define CPLAB_SEED_STREAM_SAMPLE (UINT64_C(1) << 32)

static inline unsigned long cplab_seed_stream(uint64_t seed, uint64_t stream) {
  uint64_t z = cplab_splitmix64(seed ^ cplab_splitmix64(stream));
  return (unsigned long)((z ^ (z >> 32)) & 0xFFFFFFFFu);
}

#endif
