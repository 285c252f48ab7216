// Per-row top-k (reference §6.3): a linear-bin select with the winners
// placed in order (the bin path), or, for the rows it declines, an exact
// radix select and a bitonic sort of the k winners (the radix path).
// Contracts in cplab_kernels.h (cplab_topk, cplab_topk_scratch,
// cplab_topk_split, cplab_topk_split_route); the DCP owners' merge of these
// lists, cplab_topk_merge, is topk_merge.cu.
//
// Keys (topk_key.cuh). Each candidate is one 64-bit key: the high word is the logit's bits
// made order-preserving as an unsigned integer (-0 first made +0), the low
// word 0xFFFFFFFF - index. Keys are distinct (indices are), and "larger key"
// is exactly "higher logit, then lower index": sim_indexer_topk's order. The
// winners are therefore exactly the keys >= T, T the take-th largest key:
// ties at the threshold value need no handling of their own (the low word
// decides them, lowest indices first), and every path selects the same
// set and sorts it into the same order.
//
// Files: topk_block.cuh (what the paths share: sources, the control block,
// staging, the work items), topk_radix.cuh (the radix path), topk_bins.cuh
// (the bin path); this file the kernels, the cluster path and the launchers.
//
// The bin path (topk_bins.cuh): a pass for a floor under which no
// key can win (a higher one tried first, checked by the histogram's count)
// and the row's maximum, a histogram of the keys above the floor
// over 2048 equal slices of [floor, max] (compacted first where the row is
// staged), a pass dropping the winners into their bins' slots, the order
// inside a bin by counting. Real logits leave a few dozen candidates in the
// threshold's bin and no sort.
//
// The radix path (topk_radix.cuh): MSB-first radix select over the 64-bit key
// with 11/11/10-bit digits over the value word, then, only where the
// take-th value is tied beyond what is needed, 11/11/10 over the index word.
// A pass is a histogram (2048 bins in shared memory) of the keys that match
// the digits chosen so far, then a block-wide scan for the bin holding the
// take-th largest; it stops once that bin holds exactly the keys still
// needed. As soon as that bin fits the shared candidate list, one pass
// splits the source: keys above the bin go straight to the winners, keys in
// it to the list, and every later pass reads the short list instead of the
// row. Then the bitonic sort (topk_sort).
//
// Sources. A row range (floats, the key computed on the fly) or a list of
// 64-bit keys (the split path's candidates), each either staged in shared
// memory or read where it lies in global memory (items too long to stage:
// the same passes, one global read each). Reads are 16-byte vectors where
// the data is 16-byte aligned (ks is arbitrary: a scalar head and tail).
//
// Blocks (512 threads, one per SM, up to 227 KiB of shared memory) are
// persistent: a block loops over work items (rows, or (row, chunk) pairs)
// and stages the next item's data into the row buffer as soon as the current
// item no longer reads it (after the placing or split pass), the aligned
// body by one bulk copy (cp.async.bulk on an mbarrier) and the scalar head
// and tail by cp.async, so the next row's global read overlaps this row's
// ranking or sort. The item after that is meanwhile brought into L2
// (cp.async.bulk.prefetch), so that the stage reads from L2, not DRAM:
// from DRAM it outlasted the ranking. (A stage issued before the placing
// pass, the keys' values then read back from global memory, was tried: the
// scattered 4-byte loads cost more than the overlap gained; bench/NOTES.md.)
// 512 threads, not 1024: at 64 registers a thread the passes spilled, and
// without the rare paths (which need the registers) they fit but ran no
// faster: a row's time is its k-sized work (the candidates' bins, the
// scan, placing and ranking 2048 winners), not latency that more warps
// would hide (bench/NOTES.md, 2026-12-06).
//
// Paths (the launchers):
//   - cplab_topk: one item per row (TOPK_ROWS). Rows whose range fits the
//     row buffer (about 43000 columns at k <= 2048, 39000 at k = 4096) are
//     staged; longer ones take the passes over global memory.
//   - cplab_topk_split, when few long rows would leave the GPU idle and the
//     rows do not fit: (1) TOPK_CHUNKS: one item per (row, chunk of C
//     columns), each writing its chunk's exact top-k keys (unsorted) to the
//     scratch; (2) TOPK_MERGE: one item per row selecting the row's top-k
//     from its chunks' candidates (a row's top-k is a subset of the union of
//     its chunks' top-k) and sorting it. Same keys, same set, same order.
//     Where one row or all rows' chunks fit the GPU at once (at most 8
//     chunks a row), topk_cluster_kernel instead (its own section): one
//     launch, a row a cluster of blocks sharing the bin path's steps.
//     Rows that fit but are few (m · 2 blocks <= the SMs, or one row) take
//     it too, over slices of at least 8192 columns (a decode row of 32768:
//     4 blocks); many rows that fit take cplab_topk's path.
//   - Every path writes a row's final list through one helper (topk_out,
//     topk_block.cuh), which with a conversion (cplab_topk_convert: decode
//     rows at dcp 1) also writes each entry's cache slot, its table word
//     loaded as the entry is written: the batched engine's decode rows run no
//     conversion launch after the top-k (a launch whose two dependent trips,
//     list then table, kept it at 82-88% of a same-size copy; bench/NOTES.md).
//
// Measured on an H200 (bench/NOTES.md, per-phase clocks of a staged row of
// 32768 real logits, k = 2048, in SM cycles): floor pass ~8100, compaction
// and histogram ~12400, scan ~1700, placing ~7500, issuing the next row's
// stage ~4400 (then 512 threads' cp.async; one bulk copy since, 691 -> 641
// µs for 4096 rows), ranking ~5100: ~41000 a row (the radix path: ~75000 a
// row, the sort ~23500 of them). The passes are bound by instruction issue
// and latency, not by the 512 MiB read (~130 µs). Since then (3g-3n) the
// higher floor, the cheaper passes, the bins made once a candidate and the
// candidates loaded in batches: 377 µs for 4096 rows (3m: ~26000 cycles and
// 49,000 warp instructions a row); then (3s) the item after next prefetched
// into L2, so that a stage no longer outlasts the ranking it overlaps, and
// two-slope bins, so that the ranking is shorter: 350 µs.
#include <cuda_runtime.h>

#include "check.cuh"
#include "cplab_kernels.h"
#include "cluster.cuh" // the cluster path's barriers and distributed shared memory
#include "topk_bins.cuh" // (and through it topk_radix.cuh and topk_block.cuh)

// ---- the kernel: persistent blocks over the work items ---------------------------

// Item after item (w, w + gridDim.x, ...): the next one staged as soon as the
// current one no longer reads the row buffer (topk_run_item's prefetch), the
// one after that brought into L2 meanwhile.
template <int MODE> __global__ void __launch_bounds__(TOPK_THREADS, 1) topk_kernel(topk_args a) {
  extern __shared__ uint4 topk_raw[];
  topk_ctl *c = (topk_ctl *)topk_raw;
  uint64_t *win = (uint64_t *)(c + 1), *list = win + a.win_cap;
  uint32_t *rowbuf = (uint32_t *)(list + a.list_cap);
  for (unsigned b = threadIdx.x; b < TOPK_BINS; b += TOPK_THREADS) c->hist[b] = 0;
  if (threadIdx.x == 0) mbar_init(&c->stage_bar, 1);
  __syncthreads();
  // an item is decoded again where it is used (two loads of ks, ke), so that
  // no second item's fields stay live in registers across the selection
  int64_t w = blockIdx.x;
  const void *staged = nullptr;
  bool bulk = false;       // the staged item's body came by a bulk copy
  unsigned bulk_phase = 0; // the stage barrier's phase that copy completes
  {
    topk_item first = topk_decode<MODE>(a, w);
    if (topk_stageable(a, first)) staged = topk_stage(rowbuf, first.src, first.words, c, &bulk);
  }
  if (threadIdx.x == TOPK_L2_THREAD) topk_prefetch_l2<MODE>(a, w + gridDim.x);
  for (; w < a.items; w += gridDim.x) {
    cp_async_wait<0>();
    if (threadIdx.x == 0) c->ctr = 0, c->maxb = 0, c->bstar = TOPK_BINS;
    __syncthreads(); // the staged head and tail are visible; the previous item's reads of win and list are over
    if (bulk) { // (after the barrier: the copy has been issued)
      mbar_wait(&c->stage_bar, bulk_phase & 1u);
      bulk_phase++;
    }
    const void *nstaged = nullptr;
    bool fetched = false, nbulk = false;
    auto prefetch = [&]() { // block-wide: the next item's stage, once
      if (fetched) return;
      fetched = true;
      int64_t wn = w + gridDim.x;
      if (wn >= a.items) return;
      topk_item nx = topk_decode<MODE>(a, wn);
      if (topk_stageable(a, nx)) nstaged = topk_stage(rowbuf, nx.src, nx.words, c, &nbulk);
      if (threadIdx.x == TOPK_L2_THREAD) topk_prefetch_l2<MODE>(a, wn + gridDim.x); // the item after it
    };
    // an unstaged item's list may use the row buffer too (the radix path)
    unsigned cap = staged ? a.list_cap : a.list_cap + a.row_words / 2;
    topk_run_item<MODE>(w, a, staged, cap, c, win, list, rowbuf, prefetch);
    staged = nstaged, bulk = nbulk;
  }
}

// ---- the cluster path: one row a thread-block cluster ---------------------------
//
// For few long rows (the split's case: decode rows of 64k..128k columns), one
// row a cluster of C blocks (C = the split's chunks, at most 8). Each block
// stages its slice of the row (about L / C columns) and runs the bin path's
// passes on it; the steps that need the whole row go through distributed
// shared memory: the floors are reduced into block 0's (G from C · 512
// threads), every block bins with the same span, the blocks' histograms are
// summed (each block reads all C of them), b* is found identically in every
// block, and each block drops its winners straight into block 0's winners at
// its own offset inside every bin (the bin's start plus the keys its
// predecessors have in it) and b*'s keys into block 0's list. Block 0 then
// ranks and writes the row as the one-block path does. One launch, no
// merge, no scratch. Where the path declines (a floor or maximum not finite,
// b* too full, a block's slice too short for a floor), block 0 takes the row
// alone from global memory (the bin or radix path of an unstaged row).
#define TOPK_CLUSTER_MAX 8 // blocks a cluster: the portable size

// After every block's histogram and a cluster barrier: the cluster's
// histogram (the sum of its blocks'), b* and the cut, the same in every
// block. This block's c->hist becomes its placing cursors (the cluster's
// keys above each bin plus this block's predecessors' keys in it), c->beg
// the bins' starts, c->maxb the largest bin above b*. Two more cluster
// barriers: the histograms are overwritten only once every block has read
// them.
static __device__ topk_cut topk_cluster_find(topk_ctl *c, unsigned take, unsigned rank, unsigned C) {
  unsigned t = threadIdx.x, h[TOPK_BPT], pre[TOPK_BPT], excl[TOPK_BPT];
  static_assert(TOPK_BPT == 4, "a thread's bins are one 16-byte word");
  // Every block's counts of this thread's four bins (hist[2044 - 4t ..
  // 2047 - 4t]), all loads issued before any is used (the first version
  // summed each remote load before issuing the next: ~13% of the stall
  // samples).
  uint64_t w[TOPK_CLUSTER_MAX][2];
  const unsigned *mine = &c->hist[TOPK_BINS - TOPK_BPT * (t + 1)];
#pragma unroll
  for (unsigned r = 0; r < TOPK_CLUSTER_MAX; r++) {
    uint32_t at = cluster_map(mine, r < C ? r : 0);
    w[r][0] = r < C ? cluster_ld_u64(at) : 0u;
    w[r][1] = r < C ? cluster_ld_u64(at + 8u) : 0u;
  }
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) h[i] = 0, pre[i] = 0;
#pragma unroll
  for (unsigned r = 0; r < TOPK_CLUSTER_MAX; r++) {
#pragma unroll
    for (unsigned i = 0; i < TOPK_BPT; i++) { // bin 2047 - 4t - i is word 3 - i
      unsigned v = (unsigned)(w[r][(3 - i) >> 1] >> (32 * ((3 - i) & 1)));
      h[i] += v;
      pre[i] += r < rank ? v : 0u;
    }
  }
  cluster_sync(); // every block has read every histogram
  topk_scan_bins(c, h, excl);
#pragma unroll
  for (unsigned i = 0; i < TOPK_BPT; i++) {
    unsigned b = TOPK_BINS - 1 - TOPK_BPT * t - i;
    c->hist[b] = excl[i] + pre[i];
    c->beg[b] = excl[i];
    if (excl[i] < take && take <= excl[i] + h[i]) c->bstar = b, c->above = excl[i], c->cnt = h[i];
  }
  __syncthreads();
  return topk_cut_read(c, take, h);
}

// The cluster's floors: each block's reduced into block 0's (one cluster
// barrier; block 0 set its fields to the identities before the first).
static __device__ topk_floors topk_cluster_floors(const topk_floors &mine, topk_ctl *c) {
  if (threadIdx.x == 0) {
    cluster_atomic_min_u32(cluster_map(&c->cl_proven, 0), mine.proven);
    cluster_atomic_max_u32(cluster_map(&c->cl_high, 0), mine.high);
    cluster_atomic_max_u32(cluster_map(&c->cl_hi, 0), mine.hi);
  }
  cluster_sync();
  topk_floors f;
  f.proven = cluster_ld_u32(cluster_map(&c->cl_proven, 0));
  f.high = cluster_ld_u32(cluster_map(&c->cl_high, 0));
  f.hi = cluster_ld_u32(cluster_map(&c->cl_hi, 0));
  return f;
}

// This block's slice of row r: [*lo, *lo + return) of the logits' columns;
// slices of a multiple of 4 columns, the last one shorter or empty.
static __device__ unsigned topk_cluster_slice(const topk_args &a, int64_t r, unsigned rank, unsigned C, int64_t *lo,
                                              int64_t *row_lo, int64_t *row_hi) {
  int64_t base = a.ks[r];
  *row_lo = min(max(base, (int64_t)0), a.n), *row_hi = min(max((int64_t)a.ke[r], *row_lo), a.n);
  int64_t L = *row_hi - *row_lo, each = ((L + C - 1) / C + 3) & ~(int64_t)3;
  int64_t s = min(*row_lo + rank * each, *row_hi), e = min(s + each, *row_hi);
  *lo = s;
  return (unsigned)(e - s);
}

__global__ void __launch_bounds__(TOPK_THREADS, 1) topk_cluster_kernel(topk_args a) {
  extern __shared__ uint4 topk_raw[];
  topk_ctl *c = (topk_ctl *)topk_raw;
  uint64_t *win = (uint64_t *)(c + 1), *list = win + a.win_cap;
  uint32_t *rowbuf = (uint32_t *)(list + a.list_cap);
  unsigned C = cluster_blocks(), rank = cluster_rank(), t = threadIdx.x;
  int64_t r = blockIdx.x / C, lo, row_lo, row_hi;
  unsigned len = topk_cluster_slice(a, r, rank, C, &lo, &row_lo, &row_hi);
  unsigned L = (unsigned)(row_hi - row_lo), take = min(L, (unsigned)a.k);
  for (unsigned b = t; b < TOPK_BINS; b += TOPK_THREADS) c->hist[b] = 0;
  if (t == 0) {
    mbar_init(&c->stage_bar, 1);
    c->ctr = 0, c->maxb = 0, c->bstar = TOPK_BINS;
    c->cl_proven = 0xFFFFFFFFu, c->cl_high = 0, c->cl_hi = 0;
  }
  __syncthreads();
  bool bulk = false;
  const void *staged = len ? topk_stage(rowbuf, a.logits + r * a.n + lo, len, c, &bulk) : nullptr;
  cluster_sync(); // every block runs, and block 0's floors are set
  cp_async_wait<0>();
  __syncthreads();
  if (bulk) mbar_wait(&c->stage_bar, 0);
  unsigned room = a.list_cap > TOPK_RANK_MAX ? 2 * (a.list_cap - TOPK_RANK_MAX) : 0u;
  topk_srow row(rowbuf, staged ? (uint32_t)((const uint32_t *)staged - rowbuf) : 0u, len,
                (uint32_t)(lo - a.ks[r]), (uint32_t *)(list + TOPK_RANK_MAX), room);
  unsigned g = topk_floor_g(take, C * TOPK_THREADS);
  topk_floors mine = {0u, 0u, 0u}; // an empty slice vouches for nothing: the floor 0, the path declines
  if (len && take) mine = row.floors(g, c);
  row.bn = topk_bins_make(topk_cluster_floors(mine, c), topk_floor_high(take, L));
  bool ok = take > 0 && row.bn.ok; // (the same in every block: the same floors)
  if (!ok) cluster_sync(); // every block has read block 0's floors before block 0 may end
  topk_cut cut = {TOPK_BINS, 0, 0, 0};
  if (ok) {
    row.hist(c);
    __syncthreads();
    cluster_sync(); // every block's histogram is complete
    cut = topk_cluster_find(c, take, rank, C);
    if (cut.bstar == TOPK_BINS) { // the higher floor left fewer than take keys: the proven one, again
      __syncthreads();
      if (t == 0) c->bstar = TOPK_BINS, c->maxb = 0;
      topk_hist_clear(c);
      topk_bins_span(row.bn, row.bn.proven, row.bn.hi);
      __syncthreads();
      ok = row.bn.ok; // (the same in every block: the same floors)
      if (ok) {
        row.hist(c);
        __syncthreads();
        cluster_sync();
        cut = topk_cluster_find(c, take, rank, C);
      }
    }
    ok = ok && cut.bstar != TOPK_BINS && cut.cnt <= TOPK_RANK_MAX;
  }
  if (!ok) { // block 0 takes the row alone, from global memory; no block touches another's memory again
            // (the last remote reads were before the barrier above or in topk_cluster_find)
    if (rank != 0) return;
    __syncthreads();
    if (t == 0) c->ctr = 0, c->maxb = 0, c->bstar = TOPK_BINS;
    topk_hist_clear(c);
    __syncthreads();
    if (take == 0) { // an empty row: -1 throughout
      topk_out o = topk_out_of(a, r);
      for (unsigned j = t; j < (unsigned)a.k; j += TOPK_THREADS) o.none(j);
      return;
    }
    auto none = [] {};
    topk_fsrc src(a.logits + r * a.n + row_lo, L, (uint32_t)(row_lo - a.ks[r]));
    topk_brow<topk_fsrc> whole(src);
    topk_bin_or_radix<TOPK_ROWS>(whole, src, take, r, a, false, a.list_cap + a.row_words / 2, c, win, list, none);
    return;
  }
  uint32_t win0 = cluster_map(win, 0), list0 = cluster_map(list, 0), ctr0 = cluster_map(&c->ctr, 0);
  if (rank == 0 && t == 0) topk_rank_pad(cut, win, list); // (block 0 ranks: its own win and list)
  row.place_each(cut.bstar, [&](unsigned d, uint64_t key) {
    if (d > cut.bstar) cluster_st_u64(win0 + 8u * atomicAdd(&c->hist[d], 1u), key);
    else cluster_st_u64(list0 + 8u * cluster_atomic_add_u32(ctr0, 1u), key);
  });
  __syncthreads();
  cluster_sync(); // block 0 holds the row's winners; no block's memory is read again but its own
  // (block 0 ranks alone: every block ranking a share of copies of block 0's
  // winners took 30.9 us at 1 x 131072 where this takes 28.2; bench/NOTES.md)
  if (rank == 0) topk_bin_rank<TOPK_ROWS>(c, cut, row.bn, take, r, a, win, list);
}

// ---- host side -------------------------------------------------------------------

struct topk_layout {
  unsigned win_cap, list_cap, row_words;
  size_t smem;
};

static int topk_device(int *sms, int *optin, cplab_diag *d) {
  cplab_device_facts f;
  int rc = cplab_device_facts_get(&f, d);
  if (!rc) *sms = f.sm_count, *optin = f.smem_optin;
  return rc;
}

static inline int64_t topk_min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t topk_max64(int64_t a, int64_t b) { return a > b ? a : b; }

// Shared memory of a mode: the control block, the winners (a power of two
// >= TOPK_SORT_MIN for the sort; a chunk's are not sorted), the candidate
// list and the row buffer. The row buffer gets what an item needs (n
// columns, a chunk, a row's candidates) as long as the list keeps
// TOPK_LIST_MIN entries; the list gets the rest (up to what an item can
// have). Since one block runs per SM anyway, the layout takes
// all it can use. 0 when even the minimum does not fit.

static int topk_layout_make(int mode, int64_t n, int k, int64_t chunk, int64_t chunks, int optin, topk_layout *L) {
  int64_t items = mode == TOPK_ROWS ? n : mode == TOPK_CHUNKS ? topk_min64(n, chunk) : chunks * k;
  int64_t take = topk_min64((int64_t)k, items), win = TOPK_SORT_MIN;
  if (mode == TOPK_CHUNKS) win = (take + 1) & ~(int64_t)1;
  else
    while (win < take) win <<= 1;
  int64_t words = mode == TOPK_MERGE ? 2 * items : items, want = (words + 3 + 3) & ~(int64_t)3;
  int64_t even = (items + 1) & ~(int64_t)1, list_min = topk_min64((int64_t)TOPK_LIST_MIN, even);
  int64_t avail = (int64_t)optin - (int64_t)sizeof(topk_ctl) - 8 * win;
  if (avail < 8 * list_min + 64) return 0;
  int64_t row = topk_min64(want, ((avail - 8 * list_min) / 4) & ~(int64_t)3);
  int64_t list = topk_min64(((avail - 4 * row) / 8) & ~(int64_t)1, topk_max64(even, list_min));
  L->win_cap = (unsigned)win;
  L->list_cap = (unsigned)list;
  L->row_words = (unsigned)row;
  L->smem = sizeof(topk_ctl) + 8 * (size_t)win + 8 * (size_t)list + 4 * (size_t)row;
  return 1;
}

// The split path's geometry: chunks of 16384 columns (32768 for k > 2048,
// so that a chunk keeps at most a quarter of its columns and a row's
// candidates, (chunks) · k, still fit the merge's row buffer at 131072
// columns).
static int64_t topk_chunk_cols(int k) { return k <= 2048 ? 16384 : 32768; }

// Whether cplab_topk_split splits (m, n, k) on this device: when rows are too
// long to be staged (the one-block-per-row path would read them from global
// memory, pass after pass) and few enough that their chunks' candidates stay
// a modest scratch (at most TOPK_SPLIT_ROWS_PER_SM rows per SM).
static int topk_plan(int64_t m, int64_t n, int k, int sms, int optin, int64_t *chunk, int64_t *chunks) {
  topk_layout rows;
  *chunk = topk_chunk_cols(k);
  *chunks = (n + *chunk - 1) / *chunk;
  if (m < 1 || m > (int64_t)TOPK_SPLIT_ROWS_PER_SM * sms) return 0;
  if (topk_layout_make(TOPK_ROWS, n, k, 0, 0, optin, &rows) && n + 3 <= (int64_t)rows.row_words) return 0;
  return *chunks >= 2;
}

template <int MODE>
static int topk_launch(topk_args a, int sms, int optin, void *stream, cplab_diag *d, const char *name) {
  topk_layout L;
  if (!topk_layout_make(MODE, a.n, a.k, a.chunk, a.chunks, optin, &L))
    return cplab_diag_set(d, CPLAB_EUNSUPPORTED, "%s: k %d needs more shared memory per block than the device's %d",
                          name, a.k, optin);
  a.win_cap = L.win_cap;
  a.list_cap = L.list_cap;
  a.row_words = L.row_words;
  int rc = kset_smem(d, topk_kernel<MODE>, L.smem, "topk_kernel");
  if (rc) return rc;
  unsigned grid = (unsigned)topk_min64(a.items, (int64_t)(sms > 0 ? sms : 1)); // persistent: one block per SM
  topk_kernel<MODE><<<grid, TOPK_THREADS, L.smem, kstream(stream)>>>(a);
  return kcheck_launch(d, "topk_kernel");
}

// The checks cplab_topk and cplab_topk_split share; *run = 0 when there is
// nothing to do.
static int topk_check(const cplab_topk_params *p, int *run, cplab_diag *d, const char *name) {
  *run = 0;
  KCHECK_ARG(d, p, "%s: NULL parameters", name);
  KCHECK_ARG(d, p->m >= 0 && p->n >= 0, "%s: negative size (m %lld, n %lld)", name, (long long)p->m, (long long)p->n);
  KCHECK_ARG(d, p->k >= 1 && p->k <= CPLAB_TOPK_MAX, "%s: k must be 1..%d, got %d", name, CPLAB_TOPK_MAX, p->k);
  KCHECK_ARG(d, p->n <= INT32_MAX, "%s: %lld columns exceed int32 indices", name, (long long)p->n);
  if (p->m == 0) return 0;
  KCHECK_ARG(d, (p->logits || p->n == 0) && p->ks && p->ke && p->idx, "%s: NULL argument", name);
  KCHECK_ARG(d, p->m <= KGRID_MAX_X, "%s: %lld rows too many", name, (long long)p->m);
  const cplab_topk_convert *c = p->convert;
  if (c) {
    KCHECK_ARG(d, c->num_req >= 0 && c->max_blocks >= 0 && c->block_size >= 1 && c->dcp_rank == 0,
               "%s: bad conversion (requests %d, blocks %d, block size %d, rank %d: the top-k converts at dcp 1, "
               "rank 0)", name, c->num_req, c->max_blocks, c->block_size, c->dcp_rank);
    KCHECK_ARG(d, c->row_req && c->out && (c->block_table || (int64_t)c->num_req * c->max_blocks == 0),
               "%s: NULL conversion argument", name);
  }
  *run = 1;
  return 0;
}

static topk_args topk_args_make(const cplab_topk_params *p) {
  topk_args a = {};
  a.logits = p->logits;
  a.n = p->n;
  a.ks = p->ks;
  a.ke = p->ke;
  a.k = p->k;
  a.idx = p->idx;
  a.score = p->score;
  if (p->convert) {
    const cplab_topk_convert *c = p->convert;
    a.row_req = c->row_req, a.block_table = c->block_table, a.slot = c->out;
    a.num_req = c->num_req, a.max_blocks = c->max_blocks, a.B = (uint32_t)c->block_size;
  }
  a.items = p->m;
  a.chunk = 1;
  a.chunks = 1;
  return a;
}

extern "C" int cplab_topk(const cplab_topk_params *p, void *stream, cplab_diag *d) {
  int run = 0, rc = topk_check(p, &run, d, "cplab_topk");
  if (rc || !run) return rc;
  int sms = 0, optin = 0;
  rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  return topk_launch<TOPK_ROWS>(topk_args_make(p), sms, optin, stream, d, "cplab_topk");
}

// The cluster path for the split's rows (chunks of them a row, at most the
// portable cluster size) where all clusters run at once (m · chunks blocks
// at most one an SM: at batch 64 x 131072, 512 blocks in four waves took
// 133.9 us where the split's persistent blocks took 78.6), or for one row
// (one cluster against two launches; the emulation's one SM takes this
// path with one row, the split with more): *launched 0,
// and nothing run, where not, where its layout does not fit or where the
// device refuses the cluster (its blocks, one an SM, must fit one GPC at
// once); the caller then takes the split path.
static int topk_cluster_fits(int64_t m, int64_t n, int k, int64_t chunks, int sms, int optin, topk_layout *L) {
  if (chunks < 2 || chunks > TOPK_CLUSTER_MAX || (m > 1 && m * chunks > sms)) return 0; // (chunks 0: rows too short)
  int64_t slice = (((n + chunks - 1) / chunks) + 3) & ~(int64_t)3;
  return slice >= k && topk_layout_make(TOPK_ROWS, slice, k, 0, 0, optin, L) && slice + 3 <= (int64_t)L->row_words;
}

static int topk_cluster_launch(topk_args a, int64_t m, int64_t chunks, int sms, int optin, void *stream,
                               cplab_diag *d, int *launched) {
  *launched = 0;
  topk_layout L;
  if (!topk_cluster_fits(m, a.n, a.k, chunks, sms, optin, &L)) return 0;
  a.win_cap = L.win_cap;
  a.list_cap = L.list_cap;
  a.row_words = L.row_words;
  int rc = kset_smem(d, topk_cluster_kernel, L.smem, "topk_cluster_kernel");
  if (rc) return rc;
  cudaError_t e = cluster_launch(topk_cluster_kernel, dim3((unsigned)(m * chunks)), dim3(TOPK_THREADS), L.smem,
                                 kstream(stream), (unsigned)chunks, a);
  if (e != cudaSuccess) { // refused (before it ran): the split path instead
    (void)cudaGetLastError();
    return 0;
  }
  *launched = 1;
  return kcheck_launch(d, "topk_cluster_kernel");
}

// Rows that one block could stage (decode rows up to ~43k columns) but so
// few that one block a row leaves most SMs idle: the cluster path over
// slices of at least TOPK_CLUSTER_SLICE_MIN columns (and 2k), as many
// blocks a row as there are slices, up to the portable cluster size and,
// with several rows, the SMs shared out over them (a row's block does its
// passes' fixed work on a slice as on the whole row, so more blocks a row
// shorten them only while the slice is not too short: NOTES). 0 or 1: one
// block a row.
#define TOPK_CLUSTER_SLICE_MIN 8192
static int64_t topk_cluster_staged_chunks(int64_t m, int64_t n, int k, int sms) {
  int64_t c = topk_min64(TOPK_CLUSTER_MAX, n / topk_max64(TOPK_CLUSTER_SLICE_MIN, 2 * (int64_t)k));
  return m > 1 ? topk_min64(c, sms / m) : c;
}

extern "C" int cplab_topk_split_route(int64_t m, int64_t n, int k, int sms, int smem_optin, cplab_topk_route *r,
                                      cplab_diag *d) {
  KCHECK_ARG(d, r && m >= 0 && n >= 0 && n <= INT32_MAX && k >= 1 && k <= CPLAB_TOPK_MAX && sms >= 1 &&
                    smem_optin >= 0,
             "cplab_topk_split_route: bad arguments (m %lld, n %lld, k %d, %d SMs, %d bytes)", (long long)m,
             (long long)n, k, sms, smem_optin);
  r->path = r->refused = CPLAB_TOPK_PATH_ROWS;
  r->blocks = 1;
  r->chunk = r->chunks = 0;
  r->scratch_bytes = 0;
  if (m == 0 || n == 0) return 0;
  int64_t chunk, chunks, cl;
  if (topk_plan(m, n, k, sms, smem_optin, &chunk, &chunks)) {
    r->path = r->refused = CPLAB_TOPK_PATH_CHUNKS;
    r->blocks = (int)chunks;
    r->chunk = chunk, r->chunks = chunks;
    r->scratch_bytes = (size_t)m * (size_t)chunks * (size_t)k * 8;
    cl = chunks;
  } else {
    cl = topk_cluster_staged_chunks(m, n, k, sms);
  }
  topk_layout L;
  if (topk_cluster_fits(m, n, k, cl, sms, smem_optin, &L)) r->path = CPLAB_TOPK_PATH_CLUSTER, r->blocks = (int)cl;
  return 0;
}

extern "C" int cplab_topk_split(const cplab_topk_params *p, void *stream, cplab_diag *d) {
  const char *name = "cplab_topk_split";
  int run = 0, rc = topk_check(p, &run, d, name);
  if (rc || !run) return rc;
  int sms = 0, optin = 0;
  rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  cplab_topk_route route;
  rc = cplab_topk_split_route(p->m, p->n, p->k, sms, optin, &route, d);
  if (rc) return rc;
  topk_args a = topk_args_make(p);
  int launched = 0;
  if (route.refused == CPLAB_TOPK_PATH_CHUNKS)
    KCHECK_ARG(d, p->scratch_bytes >= route.scratch_bytes && p->scratch && kaligned(p->scratch, 16),
               "%s: %zu bytes of scratch given (16-byte aligned), %zu needed (cplab_topk_scratch)", name,
               p->scratch_bytes, route.scratch_bytes); // (asked even where the cluster path, which needs none, runs)
  if (route.path == CPLAB_TOPK_PATH_CLUSTER) {
    rc = topk_cluster_launch(a, p->m, route.blocks, sms, optin, stream, d, &launched);
    if (rc || launched) return rc;
  }
  if (route.refused == CPLAB_TOPK_PATH_ROWS) return topk_launch<TOPK_ROWS>(a, sms, optin, stream, d, name);
  a.scratch = (uint64_t *)p->scratch;
  a.chunk = route.chunk;
  a.chunks = route.chunks;
  a.items = p->m * route.chunks;
  rc = topk_launch<TOPK_CHUNKS>(a, sms, optin, stream, d, name);
  if (rc) return rc;
  a.items = p->m;
  return topk_launch<TOPK_MERGE>(a, sms, optin, stream, d, name);
}

extern "C" int cplab_topk_scratch(int64_t m, int64_t n, int k, size_t *bytes, cplab_diag *d) {
  KCHECK_ARG(d, bytes && m >= 0 && n >= 0 && n <= INT32_MAX && k >= 1 && k <= CPLAB_TOPK_MAX,
             "cplab_topk_scratch: bad arguments (m %lld, n %lld, k %d)", (long long)m, (long long)n, k);
  *bytes = 0;
  if (m == 0 || n == 0) return 0;
  int sms = 0, optin = 0;
  int rc = topk_device(&sms, &optin, d);
  if (rc) return rc;
  cplab_topk_route r;
  rc = cplab_topk_split_route(m, n, k, sms, optin, &r, d);
  if (!rc) *bytes = r.scratch_bytes;
  return rc;
}
