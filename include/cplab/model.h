/* cplab/model.h: model dimensions of DeepSeek-V3.2 / GLM-5 style sparse MLA.
 *
 * Presets carry the published values (shared/reference/perf-anchors.md §1);
 * scenarios may override single fields. The cache formats cplab implements fix
 * some of them (kv_lora_rank 512, qk_rope_head_dim 64, index_head_dim 128),
 * which cplab_model_check() enforces.
 */
#ifndef CPLAB_MODEL_H
#define CPLAB_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "cplab/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cplab_model {
  char preset[32];
  int64_t hidden_size;
  int64_t num_layers;
  int64_t first_dense_layers;
  int64_t num_mtp_layers;
  int64_t num_heads;
  int64_t q_lora_rank;
  int64_t kv_lora_rank;
  int64_t qk_nope_head_dim;
  int64_t qk_rope_head_dim;
  int64_t v_head_dim;
  int64_t index_n_heads;
  int64_t index_head_dim;
  int64_t index_topk;
  int64_t n_routed_experts;
  int64_t n_active_experts;
  int64_t n_shared_experts;
  int64_t moe_intermediate_size;
  int64_t dense_intermediate_size;
  int64_t vocab_size;
  int64_t max_position_embeddings;
} cplab_model;

/* One integer field of cplab_model, for generic parsing, printing and checks. */
typedef struct cplab_model_field {
  const char *name;
  size_t offset;
  int64_t min, max;
} cplab_model_field;

const cplab_model_field *cplab_model_fields(size_t *count);
static inline int64_t *cplab_model_field_ptr(cplab_model *m, const cplab_model_field *f) {
  return (int64_t *)(void *)((char *)m + f->offset);
}
static inline int64_t cplab_model_field_get(const cplab_model *m, const cplab_model_field *f) {
  return *(const int64_t *)(const void *)((const char *)m + f->offset);
}

/* Names of the presets ("deepseek-v3.2", "glm-5"), NULL-terminated. */
const char *const *cplab_model_preset_names(void);

/* Fill out with a preset; CPLAB_ENOTFOUND for an unknown name. */
int cplab_model_preset(const char *name, cplab_model *out);

/* Check field ranges and the rules the cache formats impose. On failure the
 * diag message starts with the offending field name followed by ": ". */
int cplab_model_check(const cplab_model *m, cplab_diag *d);

/* MLA head width over the latent cache: kv_lora_rank + qk_rope_head_dim (576). */
int64_t cplab_model_mla_head_dim(const cplab_model *m);

/* Softmax scale of the attention: (qk_nope_head_dim + qk_rope_head_dim)^-1/2. */
double cplab_model_softmax_scale(const cplab_model *m);

#ifdef __cplusplus
}
#endif
#endif /* CPLAB_MODEL_H */
