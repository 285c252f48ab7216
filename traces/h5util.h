/* traces/h5util.h (internal): checked HDF5 calls for the trace library.
 *
 * Every HDF5 result is checked; a failure becomes CPLAB_EHDF5 with the path
 * involved and HDF5's own innermost message. Objects are created without
 * timestamps so that the same run gives byte-identical files. Readers use the
 * expect_* functions, which check class, size, sign, rank and shape before
 * any data is read, so a malformed file yields a message, never a bad read.
 */
#ifndef CPLAB_TRACE_H5UTIL_H
#define CPLAB_TRACE_H5UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

/* Silence HDF5's automatic error printing (errors are reported by cplab). */
void h5u_quiet(void);

/* Fail with HDF5's innermost message appended. Returns CPLAB_EHDF5. */
int h5u_fail(cplab_diag *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Close any HDF5 id (>= 0), ignoring invalid ones. */
void h5u_close(hid_t id);

/* Property lists: groups and datasets without timestamps. */
hid_t h5u_gcpl(void);

hid_t h5u_group_create(hid_t loc, const char *name, cplab_diag *d);

/* Attributes on an object. */
int h5u_attr_i64(hid_t obj, const char *name, int64_t v, cplab_diag *d);
int h5u_attr_u64(hid_t obj, const char *name, uint64_t v, cplab_diag *d);
int h5u_attr_i32(hid_t obj, const char *name, int32_t v, cplab_diag *d);
int h5u_attr_str(hid_t obj, const char *name, const char *v, cplab_diag *d);

/* Element types of datasets. */
typedef enum h5u_type { H5U_I8 = 0, H5U_U8, H5U_I32, H5U_I64, H5U_U64, H5U_F32, H5U_F64, H5U_U16 } h5u_type;
size_t h5u_type_size(h5u_type t);

/* Write an n-dimensional dataset (rank 1..3); datasets over 64 KiB are
 * chunked, shuffled and deflated, smaller ones contiguous. A zero-sized dim
 * is allowed (empty dataset). */
int h5u_write(hid_t loc, const char *name, h5u_type type, int rank, const uint64_t *dims, const void *data,
              cplab_diag *d);
/* The same with an explicit choice: compress = 0 stores the dataset
 * contiguous and unfiltered (for high-entropy tensors, where deflate gains
 * little and costs most of the write time, and chunking only adds copies). */
int h5u_write_ex(hid_t loc, const char *name, h5u_type type, int rank, const uint64_t *dims, const void *data,
                 int compress, cplab_diag *d);
/* Shorthand for rank 1. */
int h5u_write1(hid_t loc, const char *name, h5u_type type, uint64_t n, const void *data, cplab_diag *d);
/* A table: int64 [n, ncols] with a "columns" attribute naming the columns
 * ("req,len,..."), so h5py and h5dump users see what each column means. */
int h5u_write_table(hid_t loc, const char *name, int ncols, const char *columns, uint64_t n, const int64_t *data,
                    cplab_diag *d);
/* A scalar fixed-length string dataset (for JSON). */
int h5u_write_text(hid_t loc, const char *name, const char *text, cplab_diag *d);

/* Readers. The path in messages is file:object. */
int h5u_read_attr_i64(hid_t obj, const char *where, const char *name, int64_t *v, cplab_diag *d);
int h5u_read_attr_u64(hid_t obj, const char *where, const char *name, uint64_t *v, cplab_diag *d);
/* A string attribute into buf (cap bytes, NUL-terminated; too long is an error). */
int h5u_read_attr_str(hid_t obj, const char *where, const char *name, char *buf, size_t cap, cplab_diag *d);
int h5u_has(hid_t loc, const char *name);
int h5u_has_attr(hid_t obj, const char *name);

/* Open dataset name under loc, check it is an integer or float dataset that
 * converts to type without loss (same class, same sign, size <= type's), of
 * the given rank; return its dims. */
int h5u_expect(hid_t loc, const char *where, const char *name, h5u_type type, int rank, uint64_t *dims,
               cplab_diag *d);
/* Read a dataset checked by h5u_expect into buf (count elements of type). */
int h5u_read(hid_t loc, const char *where, const char *name, h5u_type type, void *buf, uint64_t count, cplab_diag *d);
/* Read a scalar fixed-length string dataset (malloc'd, NUL-terminated; at
 * most max bytes, checked from the type before reading). */
int h5u_read_text(hid_t loc, const char *where, const char *name, size_t max, char **text, cplab_diag *d);

#endif
