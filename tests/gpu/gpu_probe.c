/* GPU toolchain probe: exits 77 (skip) without a usable GPU; otherwise prints
 * the device, checks that the launchers' device facts (devinfo.cu) agree with
 * the device query (probe.cu: cudaGetDeviceProperties, asked independently)
 * and that this build's kernels run on it. */
#include <stdio.h>

#include "cplab_kernels.h"

int main(void) {
  cplab_diag d = {0};
  cplab_gpu_info info;
  int rc = cplab_gpu_query(&info, &d);
  if (rc == CPLAB_ENODEV) {
    printf("SKIP: %s\n", d.msg);
    return 77;
  }
  if (rc == 0) {
    printf("device 0 of %d: %s, sm_%d%d, %d SMs, %.1f GiB, runtime %d, driver %d\n", info.device_count, info.name,
           info.cc_major, info.cc_minor, info.sm_count, (double)info.global_mem_bytes / (1 << 30),
           info.runtime_version, info.driver_version);
    cplab_device_facts f;
    rc = cplab_device_facts_get(&f, &d);
    if (!rc && (f.device != 0 || f.sm_count != info.sm_count || f.smem_optin < 48 * 1024))
      rc = cplab_diag_set(&d, CPLAB_EINVAL, "device facts (device %d, %d SMs, %d B opt-in shared memory) disagree "
                          "with the device query (device 0, %d SMs; at least 48 KiB)", f.device, f.sm_count,
                          f.smem_optin, info.sm_count);
    if (!rc) printf("device facts: %d SMs, %d B opt-in shared memory a block\n", f.sm_count, f.smem_optin);
    if (!rc) rc = cplab_gpu_selftest(1 << 20, &d);
  }
  if (rc) {
    cplab_diag_report(stderr, "gpu_probe", &d);
    return 1;
  }
  printf("self-test kernel: 1048576 elements correct\n");
  return 0;
}
