/* Head padding: see cplab/heads.h. */
#include "cplab/heads.h"

#include <string.h>

#include "cplab/cli.h"

int cplab_heads_run(int heads, int pad) { return pad > 1 ? (heads + pad - 1) / pad * pad : heads; }

int cplab_head_pad_parse(const char *text, int lo, int *pad, cplab_diag *d) {
  int64_t n = 0;
  cplab_diag number = {0}; /* its own message is replaced by one naming every choice */
  if (strcmp(text, "auto") == 0) *pad = CPLAB_HEAD_PAD_AUTO;
  else if (strcmp(text, "none") == 0) *pad = CPLAB_HEAD_PAD_NONE;
  else if (cplab_cli_parse_int("--head-pad", text, lo, 1024, &n, &number) != 0)
    CPLAB_FAIL(d, CPLAB_EUSAGE, "--head-pad %s: expected auto, none or a multiple in [%d, 1024]", text, lo);
  else *pad = (int)n;
  return 0;
}
