/* cplab/trace.h: writing and reading cplab traces (schema: traces/SCHEMA.md).
 *
 * A run is one run file (NAME.h5: configuration, provenance, external links
 * to the ranks) plus one file per rank (NAME.rNNNN.h5: the plans and tensors
 * that rank derived or computed). Files are written under a temporary name
 * and renamed when complete, so a crash never leaves a file that validates
 * and never damages an existing trace. Readers validate every dataset's
 * type, rank, shape and value bounds before using it.
 */
#ifndef CPLAB_TRACE_H
#define CPLAB_TRACE_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"
#include "cplab/plan.h"
#include "cplab/scenario.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CPLAB_TRACE_SCHEMA "1.2.0"
#define CPLAB_TRACE_SCHEMA_MAJOR 1
#define CPLAB_TRACE_SCHEMA_MINOR 2

/* What produced the trace; never compared. The library adds versions
 * (cplab, HDF5, compiler) and the host name itself. */
typedef struct cplab_trace_provenance {
  const char *producer;     /* "sim" or "exec" */
  const char *command_line; /* may be NULL */
  const char *git_commit;   /* may be NULL */
  const char *device;       /* GPU name, or NULL */
  const char *mpi;          /* MPI library version, or NULL */
  const char *cuda;         /* CUDA runtime/driver versions, or NULL */
  const char *nccl;         /* NCCL version, or NULL */
} cplab_trace_provenance;

typedef struct cplab_trace_writer cplab_trace_writer;

/* Path of rank's file for the run file path (which must end in ".h5"). */
int cplab_trace_rank_path(const char *run_path, int rank, char *out, size_t cap, cplab_diag *d);

/* Start a file: the run file (rank = -1) or rank's file. */
int cplab_trace_create(const char *path, const cplab_scenario *s, int rank, const cplab_trace_provenance *prov,
                       cplab_trace_writer **out, cplab_diag *d);
/* Rank files: the plan rank derived for one step (token maps when present). */
int cplab_trace_write_plan(cplab_trace_writer *w, size_t step, const cplab_rank_plan *p, cplab_diag *d);
/* Run file: external links /ranks/rNNNN to every rank file (by base name). */
int cplab_trace_link_ranks(cplab_trace_writer *w, int world, cplab_diag *d);
/* Finish: close and rename into place. Frees w whatever happens. */
int cplab_trace_commit(cplab_trace_writer *w, cplab_diag *d);
/* Give up: close and remove the temporary file. Frees w. */
void cplab_trace_abort(cplab_trace_writer *w);

/* Per-layer tensors of a step (SCHEMA.md, "Layer tensors"): what the numeric
 * reference and the executor compute, stored under /steps/SSSSSS/layers/LLL. */
typedef enum cplab_trace_tensor {
  CPLAB_TT_KV_CACHE = 0,   /* uint8 [slots, 656]: this rank's fp8_ds_mla entries, slot-indexed */
  CPLAB_TT_INDEX_K_CACHE,  /* uint8 [slots, 132]: indexer-key entries, slot-indexed */
  CPLAB_TT_WORKSPACE,      /* uint16 [rows, 576]: bf16 bits of the gathered prefill workspaces, chunks concatenated */
  /* Per-row tensors have one row per sampled token when the layer has
   * sampled_tokens, else one per local token of the step. */
  CPLAB_TT_TOPK,           /* int32 [rows, k]: request-relative top-k of each row, -1 = none */
  CPLAB_TT_TOPK_CONVERTED, /* int32 [rows, k]: the same after conversion to workspace rows / cache slots */
  CPLAB_TT_TOPK_SCORES,    /* float32 [rows, k]: indexer score of each selected entry */
  CPLAB_TT_KTH_SCORE,      /* float32 [rows]: the k-th best score of each row (tie tolerance) */
  CPLAB_TT_SAMPLED_TOKENS, /* int64 [rows]: the local tokens the rows stand for */
  CPLAB_TT_ATTN_OUT,       /* float32 [rows, heads, 512]: attention output of each row */
  CPLAB_TT_ATTN_LSE,       /* float32 [rows, heads]: natural-log LSE of each row */
  CPLAB_TT_DIGESTS,        /* uint64 [n]: XXH3-64 digests standing in for tensors not stored */
  CPLAB_TT_TOPK_VALID,     /* int32 [rows]: valid (non -1) entries of each row's topk (schema 1.1) */
  /* Schema 1.2: this rank's decode partials before the DCP LSE combine, for
   * layers with a combined row (cplab_row_dcp_combined); G head blocks
   * (cplab_dcp_partial_blocks), block o = DCP member o's heads when G = dcp;
   * rows the combine does not see are NaN. */
  CPLAB_TT_ATTN_PARTIAL_OUT, /* float32 [rows, G·heads, 512]: attention over this rank's shard */
  CPLAB_TT_ATTN_PARTIAL_LSE, /* float32 [rows, G·heads]: its natural-log LSE (-inf: empty shard) */
  CPLAB_TT_COUNT
} cplab_trace_tensor;

/* Element types of the layer tensors, by SCHEMA.md's names. */
typedef enum cplab_trace_dtype {
  CPLAB_TRACE_U8 = 0,
  CPLAB_TRACE_U16,
  CPLAB_TRACE_I32,
  CPLAB_TRACE_I64,
  CPLAB_TRACE_U64,
  CPLAB_TRACE_F32
} cplab_trace_dtype;
const char *cplab_trace_dtype_name(cplab_trace_dtype t); /* "uint8" ... "float32" */
size_t cplab_trace_dtype_size(cplab_trace_dtype t);      /* bytes per element */
int cplab_trace_dtype_is_float(cplab_trace_dtype t);     /* else integers or stored bits */

/* The tensor table: the one home of what the schema says about each layer
 * tensor. The writer and the reader check against it, cplab-diff dispatches
 * on it (integers and stored bits exact, floats by tolerance, as h5diff
 * dispatches on the type in the file), and tests/unit/test_trace.c checks
 * SCHEMA.md's table of layer tensors against it. */
typedef struct cplab_trace_tensor_info {
  const char *name;
  cplab_trace_dtype dtype;
  int rank;          /* 1..3 */
  uint64_t last;     /* fixed size of the last dimension; 0: free */
  int per_row;       /* first dimension = the layer's rows (its sampled_tokens when present, else local tokens) */
  int since_minor;   /* the schema 1.x that introduced it: a file of an older minor version cannot hold it, so its
                      * absence there is no difference */
  const char *part;  /* the part of the computation it shows: "caches", "indexer", "rows" or "attention" */
} cplab_trace_tensor_info;
/* The entry of t, NULL for a value outside the enum. */
const cplab_trace_tensor_info *cplab_trace_tensor_info_of(cplab_trace_tensor t);
/* The tensor called name, -1 for none. */
int cplab_trace_tensor_find(const char *name);
const char *cplab_trace_tensor_name(cplab_trace_tensor t); /* "?" outside the enum */
int cplab_trace_tensor_since_minor(cplab_trace_tensor t);

/* Rank files: write one tensor of (step, layer). dims has the tensor's rank
 * (1..3). compress = 0 stores it contiguous and unfiltered: fp8 and bf16
 * payloads deflate by ~20% at ~35 MB/s, which would dominate the write. */
int cplab_trace_write_tensor(cplab_trace_writer *w, size_t step, int layer, cplab_trace_tensor tensor,
                             const uint64_t *dims, const void *data, int compress, cplab_diag *d);

/* digests[] of a layer (SCHEMA.md "Digests of the numeric pass"). */
enum {
  CPLAB_TRACE_DIGEST_KV_CACHE = 0, /* the rank's KV cache (cplab_maps_cache_digest) */
  CPLAB_TRACE_DIGEST_INDEX_K,      /* its indexer-key cache */
  CPLAB_TRACE_DIGEST_WORKSPACE     /* + c: gathered prefill workspace chunk c */
};

/* One layer's numeric results of a rank, as cplab-sim --numeric and
 * cplab-exec store them: per-row tensors for rows sampled local tokens
 * (nothing per row when rows == 0), then the digests. */
typedef struct cplab_trace_rows {
  int layer;
  int64_t rows;
  int k, heads;
  const int64_t *tokens;              /* [rows] */
  const int32_t *topk, *converted;    /* [rows][k] */
  const float *scores;                /* [rows][k] */
  const float *kth;                   /* [rows] */
  const float *out;                   /* [rows][heads][512] */
  const float *lse;                   /* [rows][heads] */
  int num_digests;
  const uint64_t *digests;
  const int32_t *valid;               /* [rows]: valid entries of each topk row; NULL: not stored */
  int partial_blocks;                 /* G of the partials (1, or dcp: cplab_dcp_partial_blocks) */
  const float *partial_out;           /* [rows][G·heads][512]: this rank's decode partials; NULL: not stored */
  const float *partial_lse;           /* [rows][G·heads] */
} cplab_trace_rows;
int cplab_trace_write_rows(cplab_trace_writer *w, size_t step, const cplab_trace_rows *r, cplab_diag *d);

/* Timing events (exec): one row per timed operation. op: a collective purpose
 * code (cplab_coll_what) or 100 + a kernel code; times in ns. */
typedef struct cplab_trace_event {
  int64_t step, layer, op, t_begin_ns, t_end_ns, bytes;
} cplab_trace_event;
int cplab_trace_write_events(cplab_trace_writer *w, const cplab_trace_event *events, size_t n, cplab_diag *d);

/* ---- reading ---- */
typedef struct cplab_trace cplab_trace;

typedef struct cplab_trace_info {
  char schema[32];   /* "1.0.0" */
  char producer[16]; /* "sim" / "exec" */
  char kind[8];      /* "run" / "rank" */
  int rank;          /* -1 for a run file */
  int world_size;
  int64_t num_steps;
  char scenario[CPLAB_NAME_MAX], layout[CPLAB_NAME_MAX];
  char warning[256]; /* e.g. a newer minor schema version; "" if none */
} cplab_trace_info;

/* Open and check the header (schema version: another major is an error, a
 * newer minor a warning in info.warning). */
int cplab_trace_open(const char *path, cplab_trace **out, cplab_diag *d);
/* The same on an in-memory file image (copied; for fuzzing and tests). */
int cplab_trace_open_image(const void *buf, size_t len, cplab_trace **out, cplab_diag *d);
void cplab_trace_close(cplab_trace *t);
const cplab_trace_info *cplab_trace_get_info(const cplab_trace *t);

/* Validate everything in the file against the schema (for a run file, also
 * every linked rank file). 0 when valid; CPLAB_ESCHEMA etc. with the first
 * problem otherwise. */
int cplab_trace_validate(cplab_trace *t, cplab_diag *d);

/* Rank files: read back one step's plan (layout = NULL; collectives, rows,
 * plans and any token maps as written). Free with cplab_rank_plan_free. */
int cplab_trace_read_plan(cplab_trace *t, size_t step, cplab_rank_plan **out, cplab_diag *d);

/* Rank files (schema 1.1): the rank's ids and the members of its groups, as
 * /groups records them, checked against the layout's numbering
 * (cplab/ranks.h). CPLAB_ENOTFOUND when the file has no /groups (older
 * writers). */
typedef struct cplab_trace_groups {
  cplab_rank_ids ids;
  int size[3];     /* per cplab_group_kind */
  int *members[3]; /* per cplab_group_kind: [size], in rank-in-group order */
} cplab_trace_groups;
int cplab_trace_read_groups(cplab_trace *t, cplab_trace_groups *out, cplab_diag *d);
void cplab_trace_groups_fini(cplab_trace_groups *g);

/* The schema minor version the file was written with. */
int cplab_trace_schema_minor(const cplab_trace *t);

/* Rank files: read a tensor of (step, layer) after checking it against the
 * schema; *data is malloc'd, dims gets its shape (rank per the tensor). */
int cplab_trace_read_tensor(cplab_trace *t, size_t step, int layer, cplab_trace_tensor tensor, uint64_t *dims,
                            void **data, cplab_diag *d);

/* The resolved scenario of the run (from /config/scenario_json). */
int cplab_trace_read_scenario(cplab_trace *t, cplab_scenario **out, cplab_diag *d);

/* Layer indices present in a step of a rank file (ascending); *n = 0 when
 * the step has no layer tensors. *layers is malloc'd. */
int cplab_trace_list_layers(cplab_trace *t, size_t step, int **layers, int *n, cplab_diag *d);

/* Run files: open the file of one rank through its link. */
int cplab_trace_open_rank(cplab_trace *run, int rank, cplab_trace **out, cplab_diag *d);

#ifdef __cplusplus
}
#endif
#endif
