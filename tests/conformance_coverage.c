/* conformance_coverage: fails, naming them, when a public op has no case in `clgrad
 * conformance` (tools/conformance_*.c), as grad_coverage does for gradient checks.
 *
 * Usage: conformance_coverage SOURCE_DIR CLGRAD   (CLGRAD: the built `clgrad` command)
 *
 * What counts as an op (read from the sources at each run, never from a copy):
 *   1. every name X(name) of src/tensor/ops.def (the differentiable ops, wherever
 *      declared: dist.h's clg_dist_all_reduce too);
 *   2. every function declared `CLG_API` in include/clgrad/ops.h or tensor.h that
 *      computes tensors from tensors: it returns `clg_tensor *`, or returns `clg_status`
 *      and has a `clg_tensor **` output parameter (clg_sort, clg_topk, clg_split), and
 *      some parameter of it is a `clg_tensor`. Not ops: the constructors (no tensor
 *      parameter: clg_zeros, clg_rand, clg_tensor_from_host, ...), which make values
 *      rather than compute them; the in-place updates (clg_copy_, clg_fill_, ...: no
 *      tensor out), which optimizers use outside autograd; and the names starting with
 *      `clg_tensor_` (clg_tensor_keep: ownership, not arithmetic).
 * An op NAME is covered when `clgrad conformance --list` prints a case named "NAME" or
 * "NAME (...)" (a case is named by its op, tools/conformance_cases.h) and the identifier
 * clg_NAME appears in the code of tools/conformance_*.c (so that a case named by an op
 * does call it, not a sibling: a call or a function pointer in a table).
 *
 * Self-checks, so that a parser gone blind cannot pass: each source yields ops, the
 * command lists cases and exits 0, and every ops.def name that ops.h or tensor.h declares
 * is an op by rule 2 (the declarations were read, multi-line ones included). */
#include <dirent.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define MAX_OPS 512
#define NAME_LEN 64

typedef struct names {
    int n;
    char v[MAX_OPS][NAME_LEN];
    const char *from[MAX_OPS];   /* where each was found */
} names;

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "FAIL: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failures++;
}

static bool has(const names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name)) return true;
    return false;
}

static void add(names *s, const char *name, size_t len, const char *from)
{
    char buf[NAME_LEN];
    if (len >= NAME_LEN || s->n == MAX_OPS) {
        fail("%s: a name too long or too many ops (raise NAME_LEN or MAX_OPS)", from);
        return;
    }
    memcpy(buf, name, len);
    buf[len] = 0;
    if (has(s, buf)) return;
    strcpy(s->v[s->n], buf);
    s->from[s->n++] = from;
}

/* The whole file, or NULL (and a failure). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *s = NULL;
    long len = -1;
    if (f && fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (s = malloc((size_t)len + 1)) && fread(s, 1, (size_t)len, f) == (size_t)len)
        s[len] = 0;
    else {
        free(s);
        s = NULL;
        fail("cannot read %s", path);
    }
    if (f) fclose(f);
    return s;
}

/* Comments become spaces (string and character literals are skipped over, so that a
 * "/" "*" inside one opens nothing). */
static void blank_comments(char *s)
{
    for (char *p = s; *p; p++) {
        if (*p == '"' || *p == '\'') {
            char q = *p;
            for (p++; *p && *p != q; p++)
                if (*p == '\\' && p[1]) p++;
            if (!*p) return;
        } else if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end ? end + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(stop - p));
            p = stop - 1;
        } else if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n') *p++ = ' ';
            if (!*p) return;
        }
    }
}

static bool ident_char(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

/* Text without whitespace, into out (len bytes). */
static void squeeze(const char *from, const char *to, char *out, size_t len)
{
    size_t k = 0;
    for (const char *p = from; p < to && k + 1 < len; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') out[k++] = *p;
    out[k] = 0;
}

/* The declaration `decl` (from after CLG_API to its ';'): -1 when it declares no function
 * of ours (clg_...), else 1 for an op by rule 2, 0 for another function; its name (without
 * clg_) goes to name. */
static int op_declaration(const char *decl, const char *end, char *name, size_t len)
{
    const char *open = memchr(decl, '(', (size_t)(end - decl));
    if (!open) return -1;
    const char *n = open;
    while (n > decl && (n[-1] == ' ' || n[-1] == '\t' || n[-1] == '\n')) n--;
    const char *ne = n;
    while (n > decl && ident_char(n[-1])) n--;
    if (ne - n <= 4 || (size_t)(ne - n) >= len + 4 || strncmp(n, "clg_", 4)) return -1;
    memcpy(name, n + 4, (size_t)(ne - n - 4));
    name[ne - n - 4] = 0;
    char ret[128], params[1024];
    squeeze(decl, n, ret, sizeof ret);
    squeeze(open, end, params, sizeof params);
    bool tensor_out = !strcmp(ret, "clg_tensor*") || (!strcmp(ret, "clg_status") && strstr(params, "clg_tensor**"));
    return strncmp(name, "tensor_", 7) != 0 && tensor_out && strstr(params, "clg_tensor") != NULL;
}

/* Rule 2 over one header; every function it declares also goes to `declared`. */
static void header_ops(const char *dir, const char *file, names *ops, names *declared)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/include/clgrad/%s", dir, file);
    char *s = slurp(path);
    if (!s) return;
    blank_comments(s);
    int found = 0;
    for (char *p = strstr(s, "CLG_API"); p; p = strstr(p + 1, "CLG_API")) {
        char *end = strchr(p, ';'), name[NAME_LEN];
        if (!end) break;
        if (p > s && ident_char(p[-1])) continue;
        int kind = op_declaration(p + 7, end, name, sizeof name);
        if (kind >= 0) add(declared, name, strlen(name), file);
        if (kind == 1) add(ops, name, strlen(name), file), found++;
    }
    if (!found) fail("%s: no op found (has the declaration style changed?)", path);
    free(s);
}

/* The entries `mark`name`stop` of src/tensor/<file> (comments and preprocessor lines
 * aside), into ops and defs; how many. */
static int def_entries(const char *dir, const char *file, const char *mark, char stop, names *ops, names *defs)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/src/tensor/%s", dir, file);
    char *s = slurp(path);
    if (!s) return 0;
    blank_comments(s);
    for (char *l = s; *l; l++)   /* #define CLG_UNARY(name, ...) X(name) is no entry */
        if (*l == '#' && (l == s || l[-1] == '\n'))
            while (*l && *l != '\n') *l++ = ' ';
    int found = 0;
    size_t m = strlen(mark);
    for (char *p = strstr(s, mark); p; p = strstr(p + 1, mark)) {
        if (p > s && ident_char(p[-1])) continue;
        char *n = p + m, *e = n;
        while (ident_char(*e)) e++;
        if (*e != stop || e == n) continue;
        add(defs, n, (size_t)(e - n), file);
        add(ops, n, (size_t)(e - n), file);
        found++;
    }
    if (!found) fail("%s: no %s...%c entry found", path, mark, stop);
    free(s);
    return found;
}

/* Rule 1: the X(name) entries of ops.def and the rows of unary_ops.def, which it
 * includes, into ops and defs. */
static void def_ops(const char *dir, names *ops, names *defs)
{
    def_entries(dir, "ops.def", "X(", ')', ops, defs);
    def_entries(dir, "unary_ops.def", "CLG_UNARY(", ',', ops, defs);
}

/* The ops that `clgrad conformance --list` names cases after (up to the first space). */
static void case_ops(const char *clgrad, names *cases, int *rows)
{
    char cmd[4200], line[512];
    snprintf(cmd, sizeof cmd, "'%s' conformance --list", clgrad);
    FILE *f = popen(cmd, "r");
    if (!f) {
        fail("cannot run %s", cmd);
        return;
    }
    while (fgets(line, sizeof line, f)) {
        size_t k = strcspn(line, " \n");
        if (k) add(cases, line, k, "clgrad conformance --list"), (*rows)++;
    }
    int st = pclose(f);
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fail("%s: %s %d", cmd, st != -1 && WIFSIGNALED(st) ? "killed by signal" : "exit status",
             st == -1 ? -1 : WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
    if (!*rows) fail("%s listed no case", cmd);
}

/* The code (comments blanked) of every tools/conformance_*.c, one after another. */
/* What a conformance source that includes a table of rows (unary_ops.def,
 * binary_ops.def) under a macro naming clg_##name makes of it: a mention clg_<name> per
 * row (the preprocessor's expansion, which the text search below cannot see). */
static char *row_calls(const char *dir, const char *src)
{
    static const struct { const char *file, *include, *mark; } tables[] = {
        {"unary_ops.def", "\"unary_ops.def\"", "CLG_UNARY("},
        {"binary_ops.def", "\"binary_ops.def\"", "CLG_BINARY("},
    };
    static names rows, unused;   /* large: not on the stack */
    rows.n = unused.n = 0;
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        if (strstr(src, tables[t].include) && strstr(src, "clg_##name"))
            def_entries(dir, tables[t].file, tables[t].mark, ',', &rows, &unused);
    if (!rows.n) return NULL;
    size_t len = 1;
    for (int i = 0; i < rows.n; i++) len += strlen(rows.v[i]) + 12;
    char *out = calloc(1, len);
    for (int i = 0; out && i < rows.n; i++) strcat(strcat(strcat(out, "clg_"), rows.v[i]), "(a)\n");
    return out;
}

static char *case_sources(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tools", dir);
    DIR *d = opendir(path);
    if (!d) {
        fail("cannot list %s", path);
        return NULL;
    }
    char *all = calloc(1, 1);
    size_t len = 0;
    int files = 0;
    for (struct dirent *e; all && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "conformance_", 12) || n < 3 || strcmp(e->d_name + n - 2, ".c")) continue;
        snprintf(path, sizeof path, "%s/tools/%s", dir, e->d_name);
        char *s = slurp(path);
        if (!s) continue;
        blank_comments(s);
        char *rows = row_calls(dir, s);
        if (rows) {
            char *both = malloc(strlen(s) + strlen(rows) + 1);
            if (both) strcat(strcpy(both, s), rows);
            free(s);
            free(rows);
            if (!(s = both)) continue;
        }
        size_t k = strlen(s);
        char *grown = realloc(all, len + k + 2);
        if (grown) memcpy(grown + len, s, k), len += k, grown[len++] = '\n', grown[len] = 0;
        else free(all);
        all = grown;
        free(s);
        files++;
    }
    closedir(d);
    if (!files) fail("%s/tools: no conformance_*.c", dir);
    return all;
}

/* Does the identifier clg_<op> appear, as a whole word, in code? */
static bool mentions(const char *code, const char *op)
{
    char want[NAME_LEN + 8];
    snprintf(want, sizeof want, "clg_%s", op);
    size_t n = strlen(want);
    for (const char *p = code ? strstr(code, want) : NULL; p; p = strstr(p + 1, want))
        if ((p == code || !ident_char(p[-1])) && !ident_char(p[n])) return true;
    return false;
}

static names ops, defs, declared, cases;

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: conformance_coverage SOURCE_DIR CLGRAD\n");
        return 2;
    }
    header_ops(argv[1], "ops.h", &ops, &declared);
    header_ops(argv[1], "tensor.h", &ops, &declared);
    int from_headers = ops.n, rows = 0;
    def_ops(argv[1], &ops, &defs);
    for (int i = from_headers; i < ops.n; i++)   /* ops.def's, unseen in the headers */
        if (has(&declared, ops.v[i]))
            fail("%s of ops.def is declared in ops.h or tensor.h, but not read from there as an op", ops.v[i]);
    case_ops(argv[2], &cases, &rows);
    char *code = case_sources(argv[1]);
    int missing = 0;
    for (int i = 0; i < ops.n; i++) {
        bool named = has(&cases, ops.v[i]), called = mentions(code, ops.v[i]);
        if (!named) fprintf(stderr, "op %s (%s) has no conformance case\n", ops.v[i], ops.from[i]);
        else if (!called)
            fprintf(stderr, "op %s (%s) has no conformance case: a case is named after it, but tools/conformance_*.c "
                            "never use clg_%s\n", ops.v[i], ops.from[i], ops.v[i]);
        missing += !named || !called;
    }
    free(code);
    if (missing) fprintf(stderr, "FAIL: %d of %d public ops have no conformance case\n", missing, ops.n);
    printf("%d public ops (%d from ops.h and tensor.h, %d more from ops.def), %d conformance cases: %d covered\n", ops.n,
           from_headers, ops.n - from_headers, rows, ops.n - missing);
    return failures || missing ? 1 : 0;
}
