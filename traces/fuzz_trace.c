/* libFuzzer target: any byte string, opened as an in-memory HDF5 image, must
 * give the trace reader a clean answer (valid, or invalid with a message):
 * no crash, hang or sanitizer report. Run by tests/fuzz/trace_fuzz.sh; seed
 * corpus in tests/fuzz/corpus/. */
#include <stddef.h>
#include <stdint.h>

#include "cplab/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cplab_trace *t = NULL;
  cplab_diag d = {0};
  if (cplab_trace_open_image(data, size, &t, &d) == 0) {
    cplab_trace_validate(t, &d); /* reads and checks every step of a rank file */
    cplab_trace_close(t);
  }
  return 0;
}
