/* test_model_kinds: the registry of model-file layer kinds (src/io/model_kind.h). Each
 * row is a whole descriptor: a unique name that parsing finds, that messages list in
 * the registry's order and that the format's documentation (include/clgrad/model.h)
 * names; settings that end within their array, whose keys are unique and not the keys
 * every layer has, whose defaults lie in their ranges and whose fields lie in
 * model_layer; a build function, and a shape function or a join (never both). What the
 * shapes and modules are is test_model_file's; this is what holds of every row. No
 * device: it runs in a moment. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/model_kind.h"

#ifndef CLGRAD_TEST_SOURCE_DIR
#error "CLGRAD_TEST_SOURCE_DIR names tests/ (tests/CMakeLists.txt)"
#endif

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    CHECK_MSG(n > 0, "%s: empty or unreadable", path);
    return buf;
}

/* name as a whole word in text (not as part of "conv2d_x" or "max_pool2d"'s "pool2d"). */
static bool has_word(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(text, name); p; p = strstr(p + 1, name)) {
        bool before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_');
        bool after = isalnum((unsigned char)p[n]) || p[n] == '_';
        if (!before && !after) return true;
    }
    return false;
}

static void check_settings(const model_kind *k)
{
    CHECK_MSG(k->settings[MODEL_SETTINGS_MAX - 1].key == NULL, "%s: %d settings leave no end to the list", k->name,
              MODEL_SETTINGS_MAX);
    for (int i = 0; i < MODEL_SETTINGS_MAX && k->settings[i].key; i++) {
        const model_setting *s = &k->settings[i];
        CHECK_MSG(strcmp(s->key, "type") && strcmp(s->key, "name") && strcmp(s->key, "inputs"),
                  "%s: setting \"%s\" is a key every layer has", k->name, s->key);
        for (int j = 0; j < i; j++) CHECK_MSG(strcmp(s->key, k->settings[j].key), "%s: \"%s\" twice", k->name, s->key);
        size_t size = s->type == OPT_PAIR ? 2 * sizeof(int64_t) : s->type == OPT_INT ? sizeof(int64_t)
                    : s->type == OPT_REAL ? sizeof(double) : sizeof(bool);
        CHECK_MSG(s->off + size <= sizeof(model_layer), "%s.%s: offset %zu past model_layer", k->name, s->key, s->off);
        CHECK_MSG(s->lo <= s->hi, "%s.%s: range [%g, %g]", k->name, s->key, s->lo, s->hi);
        /* an integer's stride 0 (a pool's "the kernel") is in its range too */
        CHECK_MSG(isnan(s->def) || (s->def >= s->lo && s->def <= s->hi), "%s.%s: default %g outside [%g, %g]",
                  k->name, s->key, s->def, s->lo, s->hi);
    }
}

int main(void)
{
    CHECK(model_nkinds > 0);
    char *doc = read_text(CLGRAD_TEST_SOURCE_DIR "/../include/clgrad/model.h");
    const char *list = model_kind_list(), *at = list;
    for (int i = 0; i < model_nkinds; i++) {
        const model_kind *k = model_kinds[i];
        CHECK_MSG(k && k->name && *k->name, "row %d has no name", i);
        if (!k || !k->name) continue;
        CHECK_MSG(model_kind_find(k->name) == k, "%s: found as another row", k->name);
        /* the list's next name is this row's (one failure per row that differs) */
        size_t n = strcspn(at, ",");
        CHECK_MSG(n == strlen(k->name) && !strncmp(at, k->name, n),
                  "row %d is named %s, the list has %.*s there (the row's name and its MODEL_KINDS entry differ?)", i,
                  k->name, (int)n, at);
        at += n + (at[n] == ',' ? 2 : 0);
        CHECK_MSG(!doc || has_word(doc, k->name), "%s is not in include/clgrad/model.h's list of layers", k->name);
        check_settings(k);
        CHECK_MSG(k->build != NULL, "%s has no build function", k->name);
        CHECK_MSG(!(k->shape && k->join), "%s has both a shape function and a join", k->name);
        CHECK_MSG(!k->tokens || !k->join, "%s looks up tokens and joins", k->name);
        /* Without ONNX in the library, MODEL_ONNX gives every kind none. */
        CHECK_MSG(clg_onnx_available() || k->onnx == NULL, "%s has an ONNX export in a library without ONNX", k->name);
    }
    CHECK_MSG(*at == '\0', "the list has more names than the registry: \"%s\"", at);
    CHECK(model_kind_find("conv") == NULL && model_kind_find(NULL) == NULL && model_kind_find("") == NULL);
    free(doc);
    printf("%d layer kinds, %d checks, %d failed\n", model_nkinds, check_count, check_failures);
    return check_failures ? 1 : 0;
}
