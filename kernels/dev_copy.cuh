// kernels/dev_copy.cuh: the device -> device copies of cplab_stream.h
// (cplab_dev_copy_async, cplab_dev_copy2d_async), one definition for
// kernels/stream.cu and its CPU stand-in tests/emu/stream_host.cpp, whose
// cudaMemcpyAsync and cudaMemcpy2DAsync are the emulation's (with its range
// checks). Include once, after check.cuh and cplab_stream.h.
#ifndef CPLAB_DEV_COPY_CUH
#define CPLAB_DEV_COPY_CUH

extern "C" int cplab_dev_copy_async(void *dst, const void *src, size_t bytes, void *stream, cplab_diag *d) {
  if (bytes == 0) return 0;
  KCHECK_ARG(d, dst && src, "cplab_dev_copy_async: NULL pointer");
  KCHECK_CUDA(d, cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, kstream(stream)));
  return 0;
}

extern "C" int cplab_dev_copy2d_async(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                      size_t rows, void *stream, cplab_diag *d) {
  if (width == 0 || rows == 0) return 0;
  KCHECK_ARG(d, dst && src, "cplab_dev_copy2d_async: NULL pointer");
  KCHECK_ARG(d, width <= dpitch && width <= spitch, "cplab_dev_copy2d_async: width beyond a pitch");
  KCHECK_CUDA(d, cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, kstream(stream)));
  return 0;
}

#endif
