/* tests/cli/trace_tamper.c: alters one element of a float32 dataset of a
 * trace file in place, so that CLI tests can break a trace without h5py.
 * Usage: trace_tamper FILE DATASET INDEX VALUE
 *   DATASET  a path in FILE, e.g. steps/000001/layers/000/attn_partial_out
 *   INDEX    the element's flat (row-major) index
 *   VALUE    "+X" adds X to the element, anything else sets it (nan, -inf)
 * Exit 0 done, 2 on any error (each HDF5 call checked). Test tooling: it
 * writes where the trace library never would. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *arg) {
  fprintf(stderr, "trace_tamper: %s%s%s\n", what, arg ? ": " : "", arg ? arg : "");
  return 2;
}

/* Read the dataset, change element i, write it back. */
static int tamper(hid_t ds, unsigned long long i, const char *value) {
  hid_t sp = H5Dget_space(ds);
  hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  if (sp >= 0) H5Sclose(sp);
  if (n < 0) return fail("cannot read the dataset's shape", NULL);
  if (i >= (unsigned long long)n) return fail("index past the dataset's end", value);
  hid_t ty = H5Dget_type(ds);
  H5T_class_t cls = ty < 0 ? H5T_NO_CLASS : H5Tget_class(ty);
  if (ty >= 0) H5Tclose(ty);
  if (cls != H5T_FLOAT || H5Dget_storage_size(ds) != (hsize_t)n * 4) return fail("not a float32 dataset", NULL);
  float *v = malloc(sizeof *v * (size_t)(n ? n : 1));
  if (!v) return fail("out of memory", NULL);
  int rc = H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0 ? fail("cannot read", NULL) : 0;
  char *end = NULL;
  double x = strtod(value[0] == '+' ? value + 1 : value, &end);
  if (!rc && (end == value || *end)) rc = fail("not a number", value);
  if (!rc) v[i] = value[0] == '+' ? v[i] + (float)x : (float)x;
  if (!rc && H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) rc = fail("cannot write", NULL);
  free(v);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: trace_tamper FILE DATASET INDEX VALUE (+X adds X)\n");
    return 2;
  }
  char *end = NULL;
  unsigned long long i = strtoull(argv[3], &end, 10);
  if (end == argv[3] || *end) return fail("INDEX must be a non-negative integer", argv[3]);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(argv[1], H5F_ACC_RDWR, H5P_DEFAULT);
  if (f < 0) return fail("cannot open", argv[1]);
  hid_t ds = H5Dopen2(f, argv[2], H5P_DEFAULT);
  int rc = ds < 0 ? fail("no such dataset", argv[2]) : tamper(ds, i, argv[4]);
  if (ds >= 0 && H5Dclose(ds) < 0 && !rc) rc = fail("cannot close the dataset", NULL);
  if (H5Fclose(f) < 0 && !rc) rc = fail("cannot close", argv[1]);
  return rc;
}
