/* plan/layout_table.h: the table of layouts, generated from the files of
 * plan/layouts/ by build-aux/embed-layouts.sh (plan/layout_table.c in the
 * build folder): NULL-terminated, vllm first, the other correct layouts, then
 * the mutants. Read it through cplab_layouts() and cplab_layout_find(). */
#ifndef CPLAB_PLAN_LAYOUT_TABLE_H
#define CPLAB_PLAN_LAYOUT_TABLE_H

#include "cplab/layout.h"

extern const cplab_layout *const cplab_layout_table[];

#endif
