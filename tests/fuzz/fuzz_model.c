/* libFuzzer target: the model-file parser (clgrad/model.h). Any input either fails
 * with a one-line message that starts with the file name, or parses into a model
 * whose canonical text parses again into the same canonical text (so a checkpoint's
 * description always rebuilds what was trained). The accessors run over the result. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clgrad/model.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void use(const clg_model *m)
{
    clg_model_layer_info info;
    int64_t shape[CLG_MAX_DIMS];
    for (int i = 0; i < clg_model_layer_count(m); i++)
        if (!clg_model_layer(m, i, &info) || info.ndim < 1 || info.params < 0) abort();
    if (clg_model_input(m, shape) < 1 || clg_model_outputs(m) < 1 || clg_model_param_count(m) < 0) abort();
    for (int i = 0; clg_model_class_name(m, i); i++) (void)strlen(clg_model_class_name(m, i));
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char err[512];
    clg_model *m = NULL;
    if (clg_model_parse((const char *)data, size, "fuzz.json", &m, err, sizeof err) != CLG_OK) {
        if (m || strncmp(err, "fuzz.json:", 10) || strchr(err, '\n')) abort();
        return 0;
    }
    use(m);
    char *a = clg_model_json(m), *b = NULL;
    clg_model *again = NULL;
    if (!a || clg_model_parse(a, strlen(a), "canonical", &again, err, sizeof err) != CLG_OK) {
        fprintf(stderr, "the canonical text does not parse: %s\n%s\n", err, a ? a : "(null)");
        abort();
    }
    b = clg_model_json(again);
    if (!b || strcmp(a, b)) {
        fprintf(stderr, "the canonical text changed:\n%s\n%s\n", a, b ? b : "(null)");
        abort();
    }
    free(a);
    free(b);
    clg_model_free(again);
    clg_model_free(m);
    return 0;
}
