/* model_kinds.c: the registry of layer kinds (MODEL_KINDS in model_kind.h): the array
 * that parsing looks names up in, and the names as messages list them. */
#include <string.h>

#include "model_kind.h"

#define ROW(name) &mk_##name,
const model_kind *const model_kinds[] = {MODEL_KINDS(ROW)};
#undef ROW
const int model_nkinds = (int)(sizeof model_kinds / sizeof model_kinds[0]);

const model_kind *model_kind_find(const char *name)
{
    for (int k = 0; name && k < model_nkinds; k++)
        if (!strcmp(model_kinds[k]->name, name)) return model_kinds[k];
    return NULL;
}

/* Made from the rows at compile time (each row's name is its descriptor's: test_model_kinds
 * checks it), so that the list needs no building and no lock. */
#define NAME(name) ", " #name
static const char list[] = MODEL_KINDS(NAME);
#undef NAME

const char *model_kind_list(void) { return list + 2; }
