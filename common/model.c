/* Model presets and checks: see include/cplab/model.h. */
#include "cplab/model.h"

#include <math.h>
#include <string.h>

#define FIELD(name, lo, hi) {#name, offsetof(cplab_model, name), (lo), (hi)}

static const cplab_model_field fields[] = {
    FIELD(hidden_size, 1, 1 << 20),
    FIELD(num_layers, 1, 4096),
    FIELD(first_dense_layers, 0, 4096),
    FIELD(num_mtp_layers, 0, 64),
    FIELD(num_heads, 1, 4096),
    FIELD(q_lora_rank, 1, 1 << 20),
    FIELD(kv_lora_rank, 1, 1 << 20),
    FIELD(qk_nope_head_dim, 1, 1 << 16),
    FIELD(qk_rope_head_dim, 1, 1 << 16),
    FIELD(v_head_dim, 1, 1 << 16),
    FIELD(index_n_heads, 1, 4096),
    FIELD(index_head_dim, 1, 1 << 16),
    FIELD(index_topk, 1, 1 << 20),
    FIELD(n_routed_experts, 1, 1 << 16),
    FIELD(n_active_experts, 1, 1 << 16),
    FIELD(n_shared_experts, 0, 1 << 16),
    FIELD(moe_intermediate_size, 1, 1 << 20),
    FIELD(dense_intermediate_size, 1, 1 << 22),
    FIELD(vocab_size, 1, 1 << 24),
    FIELD(max_position_embeddings, 1, (int64_t)1 << 30),
};

const cplab_model_field *cplab_model_fields(size_t *count) {
  *count = sizeof fields / sizeof fields[0];
  return fields;
}

/* perf-anchors.md §1 (DeepSeek-V3.2-Exp config; GLM-5 glm_moe_dsa config). */
static const cplab_model presets[] = {
    {.preset = "deepseek-v3.2",
     .hidden_size = 7168,
     .num_layers = 61,
     .first_dense_layers = 3,
     .num_mtp_layers = 1,
     .num_heads = 128,
     .q_lora_rank = 1536,
     .kv_lora_rank = 512,
     .qk_nope_head_dim = 128,
     .qk_rope_head_dim = 64,
     .v_head_dim = 128,
     .index_n_heads = 64,
     .index_head_dim = 128,
     .index_topk = 2048,
     .n_routed_experts = 256,
     .n_active_experts = 8,
     .n_shared_experts = 1,
     .moe_intermediate_size = 2048,
     .dense_intermediate_size = 18432,
     .vocab_size = 129280,
     .max_position_embeddings = 163840},
    {.preset = "glm-5",
     .hidden_size = 6144,
     .num_layers = 78,
     .first_dense_layers = 3,
     .num_mtp_layers = 1,
     .num_heads = 64,
     .q_lora_rank = 2048,
     .kv_lora_rank = 512,
     .qk_nope_head_dim = 192,
     .qk_rope_head_dim = 64,
     .v_head_dim = 256,
     .index_n_heads = 32,
     .index_head_dim = 128,
     .index_topk = 2048,
     .n_routed_experts = 256,
     .n_active_experts = 8,
     .n_shared_experts = 1,
     .moe_intermediate_size = 2048,
     .dense_intermediate_size = 12288,
     .vocab_size = 154880,
     .max_position_embeddings = 202752},
};

static const char *const preset_names[] = {"deepseek-v3.2", "glm-5", NULL};

const char *const *cplab_model_preset_names(void) { return preset_names; }

int cplab_model_preset(const char *name, cplab_model *out) {
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
    if (strcmp(presets[i].preset, name) == 0) {
      *out = presets[i];
      return 0;
    }
  }
  return CPLAB_ENOTFOUND;
}

int cplab_model_check(const cplab_model *m, cplab_diag *d) {
  size_t n;
  const cplab_model_field *f = cplab_model_fields(&n);
  for (size_t i = 0; i < n; i++) {
    int64_t v = cplab_model_field_get(m, &f[i]);
    if (v < f[i].min || v > f[i].max)
      CPLAB_FAIL(d, CPLAB_ERANGE, "%s: must be in [%lld, %lld], got %lld", f[i].name, (long long)f[i].min,
                 (long long)f[i].max, (long long)v);
  }
  /* The fp8_ds_mla entry is 512 e4m3 latent values + 4 scales + 64 bf16 rope values. */
  if (m->kv_lora_rank != 512)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "kv_lora_rank: must be 512, the latent width of the 656-byte fp8_ds_mla cache entry (got %lld)",
               (long long)m->kv_lora_rank);
  if (m->qk_rope_head_dim != 64)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "qk_rope_head_dim: must be 64, the rope width of the 656-byte fp8_ds_mla cache entry (got %lld)",
               (long long)m->qk_rope_head_dim);
  if (m->index_head_dim != 128)
    CPLAB_FAIL(d, CPLAB_EUNSUPPORTED,
               "index_head_dim: must be 128, the key width of the 132-byte indexer cache entry (got %lld)",
               (long long)m->index_head_dim);
  if (m->first_dense_layers > m->num_layers)
    CPLAB_FAIL(d, CPLAB_ERANGE, "first_dense_layers: %lld exceeds num_layers (%lld)",
               (long long)m->first_dense_layers, (long long)m->num_layers);
  if (m->n_active_experts > m->n_routed_experts)
    CPLAB_FAIL(d, CPLAB_ERANGE, "n_active_experts: %lld exceeds n_routed_experts (%lld)",
               (long long)m->n_active_experts, (long long)m->n_routed_experts);
  return 0;
}

int64_t cplab_model_mla_head_dim(const cplab_model *m) { return m->kv_lora_rank + m->qk_rope_head_dim; }

double cplab_model_softmax_scale(const cplab_model *m) {
  return 1.0 / sqrt((double)(m->qk_nope_head_dim + m->qk_rope_head_dim));
}
