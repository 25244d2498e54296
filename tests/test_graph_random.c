/* Graph replay of every random op: each replay must draw new numbers, the same ones the
 * eager op would have drawn at that step (the generator's position is taken by the
 * launcher from a CLG_ARG_RNG argument, never passed by an op as a plain integer).
 *
 * For each op: from one seed, four eager draws; from the same seed again, one draw
 * captured (it runs eagerly too) and three replays. Draw i of the graph must be the bits
 * of eager draw i, and no draw may repeat the one before it. Then the generator must
 * stand where four eager draws leave it, so that what follows the graph draws on. */
#include <string.h>

#include "check.h"

#define DRAWS 4
#define MAX_BYTES 4096

enum { RAND, RANDN, DROPOUT, MULTI_REPL, MULTI_DISTINCT, ATTENTION, NOPS };
static const char *const NAMES[NOPS] = {"rand", "randn", "dropout", "multinomial (replacement)",
                                        "multinomial (without replacement)", "attention dropout"};

typedef struct inputs { clg_tensor *ones, *probs, *q; } inputs;

/* One draw of op `op` (a new tensor), from inputs made before any capture. */
static clg_tensor *draw(clg_device *dev, int op, const inputs *in)
{
    const int64_t n[1] = {256};
    switch (op) {
    case RAND: return clg_rand(dev, CLG_F32, 1, n, -1, 1);
    case RANDN: return clg_randn(dev, CLG_F32, 1, n, 0, 1);
    case DROPOUT: return clg_dropout(in->ones, 0.5, true);
    case MULTI_REPL: return clg_multinomial(in->probs, 12, true);
    case MULTI_DISTINCT: return clg_multinomial(in->probs, 12, false);
    case ATTENTION: return clg_scaled_dot_product_attention(in->q, in->q, in->q, NULL, false, 0.5, 0);
    }
    return NULL;
}

static size_t bytes_of(const clg_tensor *t)
{
    return (size_t)clg_tensor_numel(t) * clg_dtype_size(clg_tensor_dtype(t));
}

/* The bits of t into out (MAX_BYTES); false when it cannot be read. */
static bool read_bits(clg_device *dev, const clg_tensor *t, unsigned char *out)
{
    CHECK_MSG(t && bytes_of(t) <= MAX_BYTES, "no result, or too large: %s", clg_device_error(dev));
    return t && bytes_of(t) <= MAX_BYTES && clg_tensor_to_host(t, out, bytes_of(t)) == CLG_OK;
}

static void eager_draws(clg_device *dev, int op, const inputs *in, unsigned char bits[DRAWS][MAX_BYTES], size_t *size,
                        uint64_t *offset_after)
{
    clg_manual_seed(dev, 11);
    for (int i = 0; i < DRAWS; i++) {
        clg_tensor *y = draw(dev, op, in);
        CHECK_MSG(read_bits(dev, y, bits[i]), "%s: eager draw %d: %s", NAMES[op], i, clg_device_error(dev));
        *size = y ? bytes_of(y) : 0;
        clg_tensor_free(y);
    }
    clg_rng_get_state(dev, NULL, offset_after);
}

static void graph_draws(clg_device *dev, int op, const inputs *in, unsigned char bits[DRAWS][MAX_BYTES],
                        uint64_t *offset_after)
{
    clg_manual_seed(dev, 11);
    CHECK_OK(dev, clg_graph_begin(dev));
    clg_tensor *y = draw(dev, op, in);
    clg_graph *g = NULL;
    CHECK_OK(dev, clg_graph_end(dev, &g));
    CHECK_MSG(g && y, "%s: capture: %s", NAMES[op], clg_device_error(dev));
    if (g && y) CHECK_OK(dev, clg_graph_output(g, "y", y));
    CHECK_MSG(read_bits(dev, y, bits[0]), "%s: the captured draw", NAMES[op]);
    for (int i = 1; g && i < DRAWS; i++) {
        CHECK_OK(dev, clg_graph_replay(g));
        CHECK_MSG(read_bits(dev, clg_graph_get(g, "y"), bits[i]), "%s: replay %d", NAMES[op], i);
    }
    clg_rng_get_state(dev, NULL, offset_after);
    clg_graph_free(g);
    clg_tensor_free(y);
}

static void test_op(clg_device *dev, int op, const inputs *in)
{
    static unsigned char eager[DRAWS][MAX_BYTES], graph[DRAWS][MAX_BYTES];
    size_t size = 0;
    uint64_t eager_offset = 0, graph_offset = 1;
    memset(graph, 0, sizeof graph);
    eager_draws(dev, op, in, eager, &size, &eager_offset);
    graph_draws(dev, op, in, graph, &graph_offset);
    for (int i = 0; i < DRAWS; i++) {
        CHECK_MSG(!memcmp(eager[i], graph[i], size), "%s: draw %d of the graph differs from the eager one", NAMES[op], i);
        if (i) CHECK_MSG(memcmp(graph[i], graph[i - 1], size), "%s: draw %d repeats draw %d", NAMES[op], i, i - 1);
    }
    CHECK_MSG(eager_offset == graph_offset, "%s: the generator stands at %llu after the replays, %llu after eager "
              "draws", NAMES[op], (unsigned long long)graph_offset, (unsigned long long)eager_offset);
}

int main(void)
{
    clg_device *dev = check_open_device();
    inputs in = {
        clg_ones(dev, CLG_F32, 1, (const int64_t[]){256}),
        clg_rand(dev, CLG_F32, 2, (const int64_t[]){3, 40}, 0.1, 1),
        clg_randn(dev, CLG_F32, 3, (const int64_t[]){2, 8, 4}, 0, 1),
    };
    CHECK_MSG(in.ones && in.probs && in.q, "inputs: %s", clg_device_error(dev));
    for (int op = 0; op < NOPS && in.ones && in.probs && in.q; op++) test_op(dev, op, &in);
    clg_tensor_free(in.ones);
    clg_tensor_free(in.probs);
    clg_tensor_free(in.q);
    clg_device_close(dev);
    return check_report("test_graph_random");
}
