/* clgrad train: train a model file. Evaluates on the test split every epoch, saves a
 * training checkpoint (with the model's canonical JSON inside) after every epoch,
 * resumes exactly from one, or starts from pretrained weights with layers frozen. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "train_run.h"

static void usage(void)
{
    printf("Usage: clgrad train MODEL.json [--data fashion-mnist|DIR|FILE.csv|text:FILE|text:DIR]\n"
           "         [--test-data DIR|FILE.csv] [--epochs N] [--batch N] [--lr X] [--seed N] [--workers N]\n"
           "         [--steps N] [--device SPEC] [--out CKPT] [--resume CKPT] [--init CKPT] [--freeze LAYERS]\n"
           "         [--metrics FILE.csv] [--tensorboard DIR] [--tensorboard-every N] [--graph]\n"
           "         [--precision float32|mixed|mixed-bf16] [--sync-bn]\n"
           "Trains the network a model file describes (see include/clgrad/model.h; examples in the\n"
           "source's examples/models/, installed in share/clgrad/models/: /usr/share/clgrad/models/\n"
           "from the Debian package), evaluating on the test split after every epoch. Options\n"
           "override the file's settings.\n"
           "  --data       fashion-mnist, a directory of IDX files (train-*/t10k-*), or a CSV file;\n"
           "               text:PATH for a model of tokens (char_lstm.json): the bytes of a file or of a\n"
           "               directory's files, read as --batch streams in windows of the model's input\n"
           "               length, the recurrent state carried between windows; the model file's\n"
           "               data.holdout (a fraction at the end) is measured after every epoch\n"
           "  --test-data  the evaluation data (default: the t10k files; none for a CSV)\n"
           "  --steps N    at most N batches (text: windows) per epoch (short runs); text: the held-out\n"
           "               evaluation too, at most N windows of each stream\n"
           "  --eval-steps N  text: at most N held-out windows of each stream per evaluation (the\n"
           "               held-out text is read as --batch streams when it is long enough)\n"
           "  --out CKPT   save a training checkpoint there after every epoch\n"
           "  --resume CKPT  continue exactly where CKPT stopped (same model and options)\n"
           "  --init CKPT  start from the weights of CKPT whose names and shapes match (a state dict of\n"
           "               one layer's module, nanoGPT's GPT say, loads into the layer that takes it)\n"
           "  --freeze L   layers (names or indices, comma-separated) whose parameters stay fixed\n"
           "  --metrics F  append a row per epoch to the CSV file F (clgrad plot F --out F.png)\n"
           "  --tensorboard DIR  write TensorBoard event files into DIR (tensorboard --logdir DIR):\n"
           "               each epoch's metrics row under epoch/ (epoch/train_loss, epoch/test_acc, ...),\n"
           "               and train/loss, train/accuracy, train/throughput and train/lr over the steps\n"
           "               since the last point (or the epoch's start); a resumed run's points replace\n"
           "               those it redoes\n"
           "  --tensorboard-every N  a train/ point every N steps (default 10; 0: epochs only)\n"
           "  --graph      capture the second step as a graph and replay it for the steps after\n"
           "               (include/clgrad/graph.h): the same results, less host work per step\n"
           "  --precision  mixed: float16 products (autocast) with loss scaling, float32 weights and\n"
           "               optimizer state; mixed-bf16: bfloat16 products; float32 (the default)\n"
           "Data-parallel: `mpirun -np N clgrad train MODEL.json ...` trains on N ranks, each on its\n"
           "part of every batch (--batch stays the whole batch), gradients averaged before each step;\n"
           "rank 0 prints, evaluates and writes --out, --metrics and --tensorboard; --resume needs\n"
           "the same N.\n"
           "  --sync-bn    batch norm with the statistics of the whole batch over all ranks (as\n"
           "               PyTorch's SyncBatchNorm), not of each rank's part: N ranks then train what\n"
           "               one process would; each batch-norm layer waits for the ranks in its passes\n");
}

static int parse(int argc, char **argv, train_opts *o)
{
    static const struct option longs[] = {
        {"data", 1, 0, 'D'}, {"test-data", 1, 0, 'T'}, {"device", 1, 0, 'd'}, {"out", 1, 0, 'o'},
        {"resume", 1, 0, 'r'}, {"init", 1, 0, 'i'}, {"freeze", 1, 0, 'f'}, {"metrics", 1, 0, 'm'},
        {"epochs", 1, 0, 'e'}, {"batch", 1, 0, 'b'}, {"lr", 1, 0, 'l'}, {"seed", 1, 0, 's'},
        {"workers", 1, 0, 'w'}, {"steps", 1, 0, 'n'}, {"graph", 0, 0, 'g'}, {"precision", 1, 0, 'p'},
        {"sync-bn", 0, 0, 'S'}, {"eval-steps", 1, 0, 'E'}, {"tensorboard", 1, 0, 'B'},
        {"tensorboard-every", 1, 0, 'N'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    const char **slot[128] = {['D'] = &o->data, ['T'] = &o->test, ['d'] = &o->device, ['o'] = &o->out,
                              ['r'] = &o->resume, ['i'] = &o->init, ['f'] = &o->freeze, ['m'] = &o->metrics,
                              ['e'] = &o->epochs, ['b'] = &o->batch, ['l'] = &o->lr, ['s'] = &o->seed,
                              ['w'] = &o->workers, ['n'] = &o->steps, ['p'] = &o->precision,
                              ['E'] = &o->eval_steps, ['B'] = &o->tensorboard, ['N'] = &o->tensorboard_every};
    opterr = 0;
    for (int c; (c = getopt_long(argc, argv, ":h", longs, NULL)) != -1;) {
        if (c == 'h') return usage(), 0;
        if (c == 'g' || c == 'S') {
            *(c == 'g' ? &o->graph : &o->sync_bn) = true;
            continue;
        }
        if (c <= 0 || c >= 128 || !slot[c]) return cli_bad_option("train", c, argv);
        *slot[c] = optarg;
    }
    if (optind != argc - 1) return cli_usage_error("train", optind >= argc ? "give a MODEL file" : "one MODEL file only");
    o->model = argv[optind];
    if (o->init && o->resume) return cli_usage_error("train", "--init and --resume do not go together");
    return -1;
}

/* Data of the kind the model takes: samples, or text for a model of tokens. */
static int data_given(const clg_model *m)
{
    const clg_model_data *d = clg_model_get_data(m);
    if (clg_model_takes_tokens(m) && !d->text[0])
        return cli_usage_error("train", "the model takes tokens (its first layer is an embedding): give --data "
                               "text:FILE|DIR (or data.text in the file)");
    if (!d->dataset[0] && !d->text[0])
        return cli_usage_error("train", "no data: give --data fashion-mnist|DIR|FILE.csv|text:FILE (or data.dataset "
                               "in the file)");
    return 0;
}

/* The file's training settings with the command line's on top. */
static int overrides(const train_opts *o, clg_model *m)
{
    clg_model_train t = *clg_model_get_train(m);
    long long v;
    double lr;
    char err[512];
#define INT_OPT(s, field, lo, hi, name)                                                                    \
    if (s) {                                                                                               \
        if (!cli_int(s, lo, hi, &v)) return cli_usage_error("train", name " must be an integer in [" #lo ", " #hi "]"); \
        t.field = v;                                                                                       \
    }
    INT_OPT(o->epochs, epochs, 1, 1000000, "--epochs")
    INT_OPT(o->batch, batch, 1, 1048576, "--batch")
    INT_OPT(o->seed, seed, 0, 9223372036854775807, "--seed")
    INT_OPT(o->workers, workers, 1, 64, "--workers")
#undef INT_OPT
    if (o->precision && !clg_precision_parse(o->precision, &t.precision))
        return cli_usage_error("train", "--precision must be float32, mixed or mixed-bf16");
    if (o->lr && !cli_real(o->lr, 1e-12, 100, &lr)) return cli_usage_error("train", "--lr must be a number in (0, 100]");
    const char *text = cli_text_path(o->data);
    if (o->data && strlen(o->data) >= 1000)   /* the model file's paths hold 1023 bytes */
        return cli_usage_error("train", "--data: the path is over 1000 bytes");
    if (clg_model_set_train(m, &t, err, sizeof err) || (o->lr && clg_model_set_lr(m, lr, err, sizeof err)) ||
        (!text && clg_model_set_data(m, o->data, o->test, err, sizeof err)))
        return cli_usage_error("train", err);
    if (text && clg_model_set_text(m, text, err, sizeof err)) return cli_fail("train", "%s: %s", o->model, err);
    if (o->test && clg_model_get_data(m)->text[0])
        return cli_usage_error("train", "--test-data does not go with text (data.holdout keeps its end out)");
    return data_given(m);
}

/* Under mpirun, this process is one rank of a data-parallel run: rank 0 alone prints,
 * evaluates and writes checkpoints and metrics. */
static int join_ranks(train_run *r)
{
    char err[512];
    if (clg_dist_init(NULL, NULL, NULL, &r->dist, err, sizeof err)) return cli_fail("train", "%s", err);
    r->rank = clg_dist_rank(r->dist);
    r->world = clg_dist_size(r->dist);
    if (r->world > 1 && r->rank > 0) {
        r->out = r->metrics = NULL;
        if (!freopen("/dev/null", "w", stdout)) return cli_fail("train", "rank %d: cannot silence stdout", r->rank);
    }
    if (r->world > 1) printf("data-parallel: %d ranks, each on its part of every batch\n", r->world);
    return 0;
}

int cmd_train(int argc, char **argv)
{
    train_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc >= 0) return rc;
    long long steps = 0, eval_steps = 0, tb_every = 10;
    if (o.tensorboard_every && !cli_int(o.tensorboard_every, 0, 1LL << 40, &tb_every))
        return cli_usage_error("train", "--tensorboard-every must be an integer >= 0");
    if (o.tensorboard_every && !o.tensorboard) return cli_usage_error("train", "--tensorboard-every needs --tensorboard DIR");
    if (o.steps && !cli_int(o.steps, 1, 1LL << 40, &steps)) return cli_usage_error("train", "--steps must be a positive integer");
    if (o.eval_steps && !cli_int(o.eval_steps, 1, 1LL << 40, &eval_steps))
        return cli_usage_error("train", "--eval-steps must be a positive integer");
    char err[1024];
    clg_model *m;
    if (clg_model_read(o.model, &m, err, sizeof err) != CLG_OK) return cli_fail("train", "%s", err);
    if ((rc = overrides(&o, m))) {
        clg_model_free(m);
        return rc;
    }
    train_run r = {.m = m, .max_steps = steps, .eval_steps = eval_steps, .out = o.out, .metrics = o.metrics};
    if ((rc = join_ranks(&r))) {
        clg_model_free(m);
        return rc;
    }
    r.out_lock = r.metrics_lock = -1;
    if (cli_check_writable("train", "--out", r.out) || cli_check_writable("train", "--metrics", r.metrics) ||
        (r.out && (r.out_lock = cli_lock_output("train", "--out", r.out)) < 0) ||
        (r.metrics && (r.metrics_lock = cli_lock_output("train", "--metrics", r.metrics)) < 0)) {
        cli_unlock_output(r.out_lock, r.out);
        clg_dist_free(r.dist);
        clg_model_free(m);
        return 1;
    }
    rc = train_tb_open(&r, o.tensorboard, tb_every);   /* before the setup: a bad DIR fails at once */
    if (!rc) rc = train_setup(&o, &r, m);   /* r.m is m: train_teardown frees it either way */
    if (!rc && o.resume) rc = train_tb_resumed(&r);
    if (!rc) rc = r.text_mode ? train_text_epochs(&r) : train_epochs(&r);
    int tb_rc = train_tb_close(&r);
    if (!rc) rc = tb_rc;
    clg_dist *dist = r.dist;
    cli_unlock_output(r.out_lock, r.out);
    cli_unlock_output(r.metrics_lock, r.metrics);
    train_teardown(&r);
    if (rc && r.world > 1) clg_dist_abort(dist, rc);   /* the others would wait for this rank */
    clg_dist_free(dist);
    return rc;
}
