/* cli.h: what the clgrad subcommands share: one-line errors, strict number options,
 * the device, datasets and text named on the command line, evaluation and gnuplot. */
#ifndef CLGRAD_TOOLS_CLI_H
#define CLGRAD_TOOLS_CLI_H

#include <stdbool.h>

#include <clgrad.h>
#include <clgrad/dist_mpi.h>   /* clg_dist_init (train, conformance): libclgrad-dist */

/* "clgrad CMD: message" on stderr as ONE line (newlines in library messages become
 * "; "). Returns 1, the exit status of a failure. */
int cli_fail(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 0 when path (given with option opt) can be written: not a folder, writable if it
 * exists, and its folder takes new files; else 1 after saying why (before a run that
 * would find out only when it first saves). NULL: nothing to check. */
int cli_check_writable(const char *cmd, const char *opt, const char *path);
/* An advisory lock on an output path (PATH.lock beside it, flock'd): -1 after saying so
 * when another live run holds it (two runs writing one checkpoint or metrics file
 * would mix them), else the lock's descriptor for cli_unlock_output. A run killed
 * leaves the file, not the lock. */
int cli_lock_output(const char *cmd, const char *opt, const char *path);
void cli_unlock_output(int fd, const char *path);
/* A long evaluation shows it is moving: clg_text_eval_options.progress with user a
 * cli_eval_progress, a line at most every 5 seconds (after the device caught up). */
typedef struct cli_eval_progress { clg_device *dev; const char *what; double start, last; } cli_eval_progress;
void cli_eval_progress_fn(int64_t done, int64_t total, void *user);
/* The usual answer to a bad flag or a missing argument: exit status 2. */
int cli_usage_error(const char *cmd, const char *what);

/* getopt_long's '?' or ':' (with opterr = 0 and a ':' first in the short options):
 * the one line naming the bad option; returns 2. */
int cli_bad_option(const char *cmd, int c, char **argv);
/* A path gnuplot can take in single quotes. */
bool cli_plot_path_ok(const char *path);

/* Whole-string numbers in [lo, hi]; false on anything else. */
bool cli_int(const char *s, long long lo, long long hi, long long *out);
bool cli_real(const char *s, double lo, double hi, double *out);

/* Open the device (NULL spec: $CLG_DEVICE or the default) and say which it is on
 * stdout; NULL after reporting the failure. */
clg_device *cli_open_device(const char *cmd, const char *spec, bool announce);

/* A dataset named as --data takes it: "fashion-mnist", a directory of IDX files
 * (train-* or t10k-* by `train`), or a .csv file. Checked against the model: sample
 * size and labels. */
clg_status cli_dataset(const char *spec, bool train, const clg_model *m, clg_dataset **out, char *err,
                       size_t errlen);
/* The evaluation set of a model's data settings: data.test when set, else the t10k
 * split of the dataset; a CSV dataset has no split: NULL (csv_itself: the file). */
clg_status cli_test_dataset(const clg_model *m, bool csv_itself, clg_dataset **out, char *err, size_t errlen);
bool cli_is_csv(const char *spec);

/* ln 2: a loss in nats per byte over this is bits per byte. */
#define CLI_LN2 0.69314718055994530942

/* "text:PATH" names text for a model of tokens: PATH; anything else: NULL. */
const char *cli_text_path(const char *spec);
/* Read text (a file or a directory's plain files, clg_text_read) into *t; 0 or the
 * exit status after reporting. */
int cli_read_text(const char *cmd, const char *path, clg_text *t);
/* Where the held-out tail of len bytes starts: len - (size_t)(len * holdout). */
size_t cli_text_split(size_t len, double holdout);

/* The model file's layers, output shapes, parameters and settings (clgrad info). */
void cli_print_layers(const clg_model *m);

/* A loader batch [B, sample...] as the model's input [B, input...]. */
clg_tensor *cli_as_input(const clg_model *m, clg_tensor *x);

/* One pass over the loader in eval mode without the tape: the model's mean loss,
 * accuracy and (when confusion is not NULL) the outputs x outputs counts. */
clg_status cli_evaluate(clg_module *net, const clg_model *m, clg_loader *l, double *loss, double *acc,
                        int64_t *confusion);

/* Rebuild a checkpoint's network from the model description inside it. *desc and
 * *net are the caller's to free; returns 0 or the exit status after reporting. */
int cli_load_checkpoint(const char *cmd, const char *path, clg_device *dev, clg_model **desc, clg_module **net);
int cli_checkpoint_model(const char *cmd, const char *path, clg_model **desc, clg_train_state *ts);

/* A growing text (gnuplot scripts); s is NULL once memory ran out. Free s. */
typedef struct cli_text {
    char *s;
    size_t len, cap;
} cli_text;
void cli_text_add(cli_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Run gnuplot on `script`, which writes `png`. false with one line in err: gnuplot
 * missing (install gnuplot-nox), its first error line, or no PNG written. */
bool cli_gnuplot(const char *script, const char *png, char *err, size_t errlen);

#endif
