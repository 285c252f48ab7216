/* Checked HDF5 helpers: see h5util.h. */
#include "h5util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK_BYTES ((size_t)1 << 20)
#define COMPRESS_ABOVE ((size_t)64 << 10)
#define DEFLATE_LEVEL 4
/* The largest chunk a reader accepts: the writer's chunks hold at most
 * CHUNK_BYTES or one row; a damaged header can claim chunks of gigabytes,
 * which libhdf5 would allocate before failing. */
#define MAX_READ_CHUNK_BYTES ((uint64_t)64 << 20)

void h5u_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

static herr_t innermost(unsigned n, const H5E_error2_t *e, void *out) {
  if (n == 0) snprintf(out, 256, "%s", e->desc ? e->desc : "");
  return 0;
}

int h5u_fail(cplab_diag *d, const char *fmt, ...) {
  char msg[CPLAB_DIAG_MSG_MAX], why[256] = "";
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, why);
  H5Eclear2(H5E_DEFAULT);
  if (why[0]) return cplab_diag_set(d, CPLAB_EHDF5, "%s (HDF5: %s)", msg, why);
  return cplab_diag_set(d, CPLAB_EHDF5, "%s", msg);
}

void h5u_close(hid_t id) {
  if (id < 0) return;
  switch (H5Iget_type(id)) {
    case H5I_FILE: H5Fclose(id); break;
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    case H5I_GENPROP_LST: H5Pclose(id); break;
    default: break;
  }
}

hid_t h5u_gcpl(void) {
  hid_t p = H5Pcreate(H5P_GROUP_CREATE);
  if (p >= 0) H5Pset_obj_track_times(p, 0);
  return p;
}

hid_t h5u_group_create(hid_t loc, const char *name, cplab_diag *d) {
  hid_t gcpl = h5u_gcpl();
  hid_t g = gcpl < 0 ? -1 : H5Gcreate2(loc, name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
  h5u_close(gcpl);
  if (g < 0) h5u_fail(d, "cannot create group '%s'", name);
  return g;
}

static int attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, const void *v, cplab_diag *d) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = space < 0 ? -1 : H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
  int rc = (a < 0 || H5Awrite(a, mtype, v) < 0) ? h5u_fail(d, "cannot write attribute '%s'", name) : 0;
  h5u_close(a);
  h5u_close(space);
  return rc;
}

int h5u_attr_i64(hid_t obj, const char *name, int64_t v, cplab_diag *d) {
  return attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v, d);
}
int h5u_attr_u64(hid_t obj, const char *name, uint64_t v, cplab_diag *d) {
  return attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &v, d);
}
int h5u_attr_i32(hid_t obj, const char *name, int32_t v, cplab_diag *d) {
  return attr_write(obj, name, H5T_STD_I32LE, H5T_NATIVE_INT32, &v, d);
}

/* Fixed-length ASCII strings (openPMD): readable everywhere, no heap. */
int h5u_attr_str(hid_t obj, const char *name, const char *v, cplab_diag *d) {
  size_t n = strlen(v);
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0 || H5Tset_size(t, n ? n : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0) {
    h5u_close(t);
    return h5u_fail(d, "cannot make a string type for '%s'", name);
  }
  int rc = attr_write(obj, name, t, t, n ? v : "", d);
  h5u_close(t);
  return rc;
}

static hid_t file_type(h5u_type t) {
  switch (t) {
    case H5U_I8: return H5T_STD_I8LE;
    case H5U_U8: return H5T_STD_U8LE;
    case H5U_I32: return H5T_STD_I32LE;
    case H5U_I64: return H5T_STD_I64LE;
    case H5U_U64: return H5T_STD_U64LE;
    case H5U_F32: return H5T_IEEE_F32LE;
    case H5U_F64: return H5T_IEEE_F64LE;
    case H5U_U16: return H5T_STD_U16LE;
  }
  return -1;
}

static hid_t mem_type(h5u_type t) {
  switch (t) {
    case H5U_I8: return H5T_NATIVE_INT8;
    case H5U_U8: return H5T_NATIVE_UINT8;
    case H5U_I32: return H5T_NATIVE_INT32;
    case H5U_I64: return H5T_NATIVE_INT64;
    case H5U_U64: return H5T_NATIVE_UINT64;
    case H5U_F32: return H5T_NATIVE_FLOAT;
    case H5U_F64: return H5T_NATIVE_DOUBLE;
    case H5U_U16: return H5T_NATIVE_UINT16;
  }
  return -1;
}

size_t h5u_type_size(h5u_type t) {
  static const size_t sizes[] = {1, 1, 4, 8, 8, 4, 8, 2};
  return sizes[t];
}

static const char *type_word(h5u_type t) {
  static const char *const words[] = {"int8", "uint8", "int32", "int64", "uint64", "float32", "float64", "uint16"};
  return words[t];
}

int h5u_write(hid_t loc, const char *name, h5u_type type, int rank, const uint64_t *dims, const void *data,
              cplab_diag *d) {
  return h5u_write_ex(loc, name, type, rank, dims, data, 1, d);
}

int h5u_write_ex(hid_t loc, const char *name, h5u_type type, int rank, const uint64_t *dims, const void *data,
                 int compress, cplab_diag *d) {
  hsize_t hd[3], chunk[3];
  size_t count = 1;
  for (int i = 0; i < rank; i++) {
    hd[i] = dims[i];
    count *= (size_t)dims[i];
  }
  size_t bytes = count * h5u_type_size(type);
  hid_t space = H5Screate_simple(rank, hd, NULL), dcpl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
  int rc = 0;
  /* Every element is written right away: no fill values to write first. */
  if (space < 0 || dcpl < 0 || H5Pset_obj_track_times(dcpl, 0) < 0 || H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER) < 0)
    rc = h5u_fail(d, "cannot prepare dataset '%s'", name);
  if (!rc && compress && bytes > COMPRESS_ABOVE) {
    /* Chunks of about 1 MiB along the first dimension. */
    size_t row = bytes / (size_t)hd[0];
    chunk[0] = row >= CHUNK_BYTES ? 1 : CHUNK_BYTES / row;
    if (chunk[0] > hd[0]) chunk[0] = hd[0];
    for (int i = 1; i < rank; i++) chunk[i] = hd[i];
    if (H5Pset_chunk(dcpl, rank, chunk) < 0 ||
        (compress && (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, DEFLATE_LEVEL) < 0)))
      rc = h5u_fail(d, "cannot set chunking and compression of '%s'", name);
  }
  if (!rc) ds = H5Dcreate2(loc, name, file_type(type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (!rc && ds < 0) rc = h5u_fail(d, "cannot create dataset '%s'", name);
  if (!rc && count > 0 && H5Dwrite(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    rc = h5u_fail(d, "cannot write dataset '%s'", name);
  h5u_close(ds);
  h5u_close(dcpl);
  h5u_close(space);
  return rc;
}

int h5u_write1(hid_t loc, const char *name, h5u_type type, uint64_t n, const void *data, cplab_diag *d) {
  return h5u_write(loc, name, type, 1, &n, data, d);
}

int h5u_write_table(hid_t loc, const char *name, int ncols, const char *columns, uint64_t n, const int64_t *data,
                    cplab_diag *d) {
  uint64_t dims[2] = {n, (uint64_t)ncols};
  int rc = h5u_write(loc, name, H5U_I64, 2, dims, data, d);
  if (rc) return rc;
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return h5u_fail(d, "cannot reopen '%s'", name);
  rc = h5u_attr_str(ds, "columns", columns, d);
  h5u_close(ds);
  return rc;
}

/* Long texts are scalar fixed-length strings: their size is in the type, so
 * readers can bound it before reading (a variable-length string lets a
 * damaged heap make HDF5 read for minutes). */
int h5u_write_text(hid_t loc, const char *name, const char *text, cplab_diag *d) {
  size_t n = strlen(text);
  hid_t t = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), dcpl = H5Pcreate(H5P_DATASET_CREATE), ds = -1;
  int rc = 0;
  if (t < 0 || space < 0 || dcpl < 0 || H5Tset_size(t, n ? n : 1) < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 ||
      H5Pset_obj_track_times(dcpl, 0) < 0)
    rc = h5u_fail(d, "cannot prepare text dataset '%s'", name);
  if (!rc) ds = H5Dcreate2(loc, name, t, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (!rc && (ds < 0 || H5Dwrite(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, n ? text : "") < 0))
    rc = h5u_fail(d, "cannot write text dataset '%s'", name);
  h5u_close(ds);
  h5u_close(dcpl);
  h5u_close(space);
  h5u_close(t);
  return rc;
}

int h5u_has(hid_t loc, const char *name) { return H5Lexists(loc, name, H5P_DEFAULT) > 0; }
int h5u_has_attr(hid_t obj, const char *name) { return H5Aexists(obj, name) > 0; }

/* Open a scalar attribute and check its class and size. */
static hid_t attr_open(hid_t obj, const char *where, const char *name, H5T_class_t cls, size_t max_size,
                       cplab_diag *d) {
  if (H5Aexists(obj, name) <= 0) {
    cplab_diag_set(d, CPLAB_ESCHEMA, "%s: missing attribute '%s'", where, name);
    return -1;
  }
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t t = a < 0 ? -1 : H5Aget_type(a), s = a < 0 ? -1 : H5Aget_space(a);
  int ok = a >= 0 && t >= 0 && s >= 0 && H5Tget_class(t) == cls && (max_size == 0 || H5Tget_size(t) <= max_size) &&
           H5Sget_simple_extent_type(s) == H5S_SCALAR;
  h5u_close(t);
  h5u_close(s);
  if (!ok) {
    h5u_close(a);
    H5Eclear2(H5E_DEFAULT);
    cplab_diag_set(d, CPLAB_ESCHEMA, "%s: attribute '%s' is not a scalar %s", where, name,
                   cls == H5T_STRING ? "string" : "integer");
    return -1;
  }
  return a;
}

int h5u_read_attr_i64(hid_t obj, const char *where, const char *name, int64_t *v, cplab_diag *d) {
  hid_t a = attr_open(obj, where, name, H5T_INTEGER, 8, d);
  if (a < 0) return d ? d->code : CPLAB_ESCHEMA;
  hid_t t = H5Aget_type(a);
  int unsigned64 = H5Tget_sign(t) == H5T_SGN_NONE && H5Tget_size(t) == 8;
  h5u_close(t);
  uint64_t raw = 0;
  int rc = 0;
  if (unsigned64) {
    if (H5Aread(a, H5T_NATIVE_UINT64, &raw) < 0) rc = h5u_fail(d, "%s: cannot read attribute '%s'", where, name);
    else if (raw > INT64_MAX) rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: attribute '%s' is out of range", where, name);
    else *v = (int64_t)raw;
  } else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0) {
    rc = h5u_fail(d, "%s: cannot read attribute '%s'", where, name);
  }
  h5u_close(a);
  return rc;
}

int h5u_read_attr_u64(hid_t obj, const char *where, const char *name, uint64_t *v, cplab_diag *d) {
  hid_t a = attr_open(obj, where, name, H5T_INTEGER, 8, d);
  if (a < 0) return d ? d->code : CPLAB_ESCHEMA;
  hid_t t = H5Aget_type(a);
  int sign = H5Tget_sign(t);
  h5u_close(t);
  int rc = 0;
  if (sign != H5T_SGN_NONE) rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: attribute '%s' must be unsigned", where, name);
  else if (H5Aread(a, H5T_NATIVE_UINT64, v) < 0) rc = h5u_fail(d, "%s: cannot read attribute '%s'", where, name);
  h5u_close(a);
  return rc;
}

int h5u_read_attr_str(hid_t obj, const char *where, const char *name, char *buf, size_t cap, cplab_diag *d) {
  hid_t a = attr_open(obj, where, name, H5T_STRING, 0, d);
  if (a < 0) return d ? d->code : CPLAB_ESCHEMA;
  hid_t t = H5Aget_type(a);
  int rc = 0;
  if (H5Tis_variable_str(t) > 0 || H5Tget_size(t) >= cap) {
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: attribute '%s' must be a fixed-length string under %zu bytes", where,
                        name, cap);
  } else {
    size_t n = H5Tget_size(t);
    memset(buf, 0, cap);
    if (H5Aread(a, t, buf) < 0) rc = h5u_fail(d, "%s: cannot read attribute '%s'", where, name);
    buf[n] = '\0';
  }
  h5u_close(t);
  h5u_close(a);
  return rc;
}

int h5u_expect(hid_t loc, const char *where, const char *name, h5u_type type, int rank, uint64_t *dims,
               cplab_diag *d) {
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0)
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing dataset '%s'", where, name);
  /* HDF5 1.12 maps H5Oget_info_by_name to version 3 (a fields argument, a new
   * info type); 1.10 (Debian 12, the GPU node) to version 1. */
#if H5_VERSION_GE(1, 12, 0)
  H5O_info2_t info;
  herr_t got = H5Oget_info_by_name3(loc, name, &info, H5O_INFO_BASIC, H5P_DEFAULT);
#else
  H5O_info_t info;
  herr_t got = H5Oget_info_by_name(loc, name, &info, H5P_DEFAULT);
#endif
  if (got < 0 || info.type != H5O_TYPE_DATASET) {
    H5Eclear2(H5E_DEFAULT);
    CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: '%s' is not a dataset", where, name);
  }
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return h5u_fail(d, "%s: cannot open dataset '%s'", where, name);
  hid_t t = H5Dget_type(ds), s = H5Dget_space(ds);
  int rc = 0;
  H5T_class_t want = type >= H5U_F32 ? H5T_FLOAT : H5T_INTEGER;
  int want_unsigned = type == H5U_U8 || type == H5U_U64 || type == H5U_U16;
  if (t < 0 || s < 0) rc = h5u_fail(d, "%s: cannot inspect dataset '%s'", where, name);
  else if (H5Tget_class(t) != want || H5Tget_size(t) > h5u_type_size(type) ||
           (want == H5T_INTEGER && (H5Tget_sign(t) == H5T_SGN_NONE) != want_unsigned))
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' must hold %s values", where, name, type_word(type));
  else if (H5Sget_simple_extent_ndims(s) != rank)
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' must have %d dimension%s, has %d", where, name, rank,
                        rank == 1 ? "" : "s", H5Sget_simple_extent_ndims(s));
  if (!rc) {
    hsize_t hd[3];
    H5Sget_simple_extent_dims(s, hd, NULL);
    for (int i = 0; i < rank; i++) dims[i] = hd[i];
  }
  h5u_close(s);
  h5u_close(t);
  h5u_close(ds);
  return rc;
}

/* CPLAB_ESCHEMA when ds is chunked with chunks larger than a reader accepts. */
static int chunks_ok(hid_t ds, const char *where, const char *name, cplab_diag *d) {
  hid_t dcpl = H5Dget_create_plist(ds), t = H5Dget_type(ds);
  hsize_t dims[H5S_MAX_RANK];
  uint64_t bytes = t < 0 ? 0 : H5Tget_size(t);
  int rc = dcpl < 0 || t < 0 ? h5u_fail(d, "%s: cannot inspect dataset '%s'", where, name) : 0;
  if (!rc && H5Pget_layout(dcpl) == H5D_CHUNKED) {
    int n = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
    for (int i = 0; i < n && bytes <= MAX_READ_CHUNK_BYTES; i++) bytes = dims[i] ? bytes * dims[i] : bytes;
    if (n < 0 || bytes > MAX_READ_CHUNK_BYTES)
      rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' claims chunks over %llu bytes (damaged?)", where, name,
                          (unsigned long long)MAX_READ_CHUNK_BYTES);
  }
  H5Eclear2(H5E_DEFAULT);
  h5u_close(t);
  if (dcpl >= 0) H5Pclose(dcpl);
  return rc;
}

int h5u_read(hid_t loc, const char *where, const char *name, h5u_type type, void *buf, uint64_t count, cplab_diag *d) {
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return h5u_fail(d, "%s: cannot open dataset '%s'", where, name);
  hid_t s = H5Dget_space(ds);
  int rc = chunks_ok(ds, where, name, d);
  if (!rc && (s < 0 || (uint64_t)H5Sget_simple_extent_npoints(s) != count))
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: dataset '%s' changed size while reading", where, name);
  if (!rc && count > 0 && H5Dread(ds, mem_type(type), H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0)
    rc = h5u_fail(d, "%s: cannot read dataset '%s' (damaged?)", where, name);
  h5u_close(s);
  h5u_close(ds);
  return rc;
}

int h5u_read_text(hid_t loc, const char *where, const char *name, size_t max, char **text, cplab_diag *d) {
  *text = NULL;
  if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) CPLAB_FAIL(d, CPLAB_ESCHEMA, "%s: missing dataset '%s'", where, name);
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (ds < 0) return h5u_fail(d, "%s: cannot open dataset '%s'", where, name);
  hid_t t = H5Dget_type(ds), s = H5Dget_space(ds);
  size_t n = t < 0 ? 0 : H5Tget_size(t);
  int rc = 0;
  if (t < 0 || s < 0 || H5Tget_class(t) != H5T_STRING || H5Tis_variable_str(t) != 0 ||
      H5Sget_simple_extent_type(s) != H5S_SCALAR) {
    H5Eclear2(H5E_DEFAULT);
    rc = cplab_diag_set(d, CPLAB_ESCHEMA, "%s: '%s' must be a scalar fixed-length string", where, name);
  } else if (n > max) {
    rc = cplab_diag_set(d, CPLAB_ERANGE, "%s: '%s' is longer than %zu bytes", where, name, max);
  } else if (!(*text = calloc(n + 1, 1))) {
    rc = cplab_diag_set(d, CPLAB_ENOMEM, "out of memory");
  } else if (H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, *text) < 0) {
    free(*text);
    *text = NULL;
    rc = h5u_fail(d, "%s: cannot read '%s' (damaged?)", where, name);
  }
  h5u_close(s);
  h5u_close(t);
  h5u_close(ds);
  return rc;
}
