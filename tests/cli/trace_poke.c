/* tests/cli/trace_poke.c: reads or changes one element of a trace dataset, or
 * prints one string attribute, so that a shell test can tamper with a copy of
 * a golden trace without h5py (tests/cli/golden_gpu.sh). Test tool, not part
 * of cplab: it writes in place, with no schema checks.
 *   trace_poke get FILE DATASET INDEX        print element INDEX (flat, row-major)
 *   trace_poke set FILE DATASET INDEX VALUE  overwrite it; prints "OLD -> NEW"
 *   trace_poke add FILE DATASET INDEX DELTA  add DELTA to it; prints "OLD -> NEW"
 *   trace_poke attr FILE OBJECT NAME         print the string attribute NAME of OBJECT
 * Datasets of integers (1, 2, 4 or 8 bytes) and of float32/float64 are read
 * and written as double or long long; exit 0, or 2 with a message. */
#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void) {
  fprintf(stderr, "usage: trace_poke get FILE DATASET INDEX\n"
                  "       trace_poke set FILE DATASET INDEX VALUE\n"
                  "       trace_poke add FILE DATASET INDEX DELTA\n"
                  "       trace_poke attr FILE OBJECT NAME\n");
  return 2;
}

static int print_attr(hid_t file, const char *obj, const char *name) {
  int rc = 2;
  hid_t a = H5Aopen_by_name(file, obj, name, H5P_DEFAULT, H5P_DEFAULT);
  hid_t t = a < 0 ? -1 : H5Aget_type(a);
  if (t >= 0 && H5Tget_class(t) == H5T_STRING && !H5Tis_variable_str(t)) {
    size_t n = H5Tget_size(t);
    char *s = calloc(n + 1, 1);
    if (s && H5Aread(a, t, s) >= 0) {
      printf("%s\n", s);
      rc = 0;
    }
    free(s);
  }
  if (rc) fprintf(stderr, "trace_poke: no fixed-length string attribute %s of %s\n", name, obj);
  if (t >= 0) H5Tclose(t);
  if (a >= 0) H5Aclose(a);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 5) return usage();
  const char *cmd = argv[1], *path = argv[2], *obj = argv[3];
  int add = !strcmp(cmd, "add"), set = add || !strcmp(cmd, "set");
  if (!strcmp(cmd, "attr") ? argc != 5 : set ? argc != 6 : strcmp(cmd, "get") || argc != 5) return usage();
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  hid_t f = H5Fopen(path, set ? H5F_ACC_RDWR : H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) {
    fprintf(stderr, "trace_poke: cannot open %s\n", path);
    return 2;
  }
  if (!strcmp(cmd, "attr")) {
    int rc = print_attr(f, obj, argv[4]);
    H5Fclose(f);
    return rc;
  }
  int rc = 2;
  char *end;
  errno = 0;
  unsigned long long index = strtoull(argv[4], &end, 10);
  hid_t d = H5Dopen2(f, obj, H5P_DEFAULT);
  hid_t t = d < 0 ? -1 : H5Dget_type(d);
  hid_t sp = d < 0 ? -1 : H5Dget_space(d);
  H5T_class_t cls = t < 0 ? H5T_NO_CLASS : H5Tget_class(t);
  hssize_t count = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
  if (d < 0) fprintf(stderr, "trace_poke: %s: no dataset %s\n", path, obj);
  else if (cls != H5T_INTEGER && cls != H5T_FLOAT) fprintf(stderr, "trace_poke: %s is not numeric\n", obj);
  else if (errno || *end || !*argv[4] || count < 0 || index >= (unsigned long long)count)
    fprintf(stderr, "trace_poke: index '%s' is not in 0 .. %lld of %s\n", argv[4], (long long)count - 1, obj);
  else {
    /* One element through a point selection, in the memory type of its class. */
    hsize_t one = 1, coords[H5S_MAX_RANK], dims[H5S_MAX_RANK];
    int rank = H5Sget_simple_extent_ndims(sp);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    unsigned long long rest = index;
    for (int i = rank - 1; i >= 0; i--) coords[i] = rest % dims[i], rest /= dims[i];
    hid_t mem = H5Screate_simple(1, &one, NULL);
    hid_t mt = cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE : H5T_NATIVE_LLONG;
    double dv = 0;
    long long iv = 0;
    void *buf = cls == H5T_FLOAT ? (void *)&dv : (void *)&iv;
    if (H5Sselect_elements(sp, H5S_SELECT_SET, 1, coords) >= 0 && H5Dread(d, mt, mem, sp, H5P_DEFAULT, buf) >= 0) {
      if (cls == H5T_FLOAT) printf("%.9g", dv);
      else printf("%lld", iv);
      rc = 0;
      if (set) {
        errno = 0;
        if (cls == H5T_FLOAT) dv = strtod(argv[5], &end) + (add ? dv : 0);
        else iv = strtoll(argv[5], &end, 10) + (add ? iv : 0);
        if (errno || *end || !*argv[5]) {
          fprintf(stderr, "\ntrace_poke: bad value '%s'\n", argv[5]);
          rc = 2;
        } else if (H5Dwrite(d, mt, mem, sp, H5P_DEFAULT, buf) < 0) {
          fprintf(stderr, "\ntrace_poke: cannot write %s of %s\n", obj, path);
          rc = 2;
        } else if (cls == H5T_FLOAT) printf(" -> %.9g", dv);
        else printf(" -> %lld", iv);
      }
      printf("\n");
    } else fprintf(stderr, "trace_poke: cannot read %s of %s\n", obj, path);
    H5Sclose(mem);
  }
  if (sp >= 0) H5Sclose(sp);
  if (t >= 0) H5Tclose(t);
  if (d >= 0) H5Dclose(d);
  if (H5Fclose(f) < 0 && !rc) {
    fprintf(stderr, "trace_poke: cannot close %s\n", path);
    rc = 2;
  }
  return rc;
}
