/* capture_plan.c: turning a recording into something to replay.
 *
 * Memory: a buffer whose lifetime ended inside the capture (an activation, a
 * gradient in flight, a kernel's scratch) is needed only from the first command that
 * names it to the last. Those lifetimes are packed into shared slots, largest first,
 * each into the first slot none of whose lifetimes overlaps it (the pool did the same
 * during the eager step, but only among buffers of the same size class). Buffers that
 * outlive the capture (parameters, their gradients, optimizer state, outputs) or that
 * were made before it are used as they are, and held.
 *
 * Copies: a gradient is written into its .grad through a copy (the backward makes it
 * in a buffer of its own, and a later step's graph must find .grad where it was). When
 * the copy's source dies at the copy and the destination is untouched while the
 * source lives, the source's producers can write the destination directly: the copy is
 * left out, and its source needs no memory. That needs the whole step: eagerly, the
 * copy is made before it is known that nothing else reads the source.
 *
 * ReLU: a ReLU that reads the whole result of a GEMM that nothing else reads is folded
 * into the GEMM's write-out (gemm.cl, CLG_EPI_RELU): the GEMM writes the ReLU's output
 * buffer, and the ReLU's launch is left out. Eagerly, the GEMM cannot know that its
 * result feeds only a ReLU.
 *
 * Elementwise pairs: an elementwise launch whose result the next launch, another
 * elementwise op over the same elements, reads runs with it as one kernel
 * (cl_kernels/ewfuse.cl): one launch and one pass over the result fewer, and where
 * nothing else reads the result it is not stored at all. Eagerly, an op cannot know
 * what the next one will be.
 *
 * Kernels: every launch gets its own kernel object with its arguments set once, so
 * that a replay only enqueues. */
#include <stdlib.h>
#include <string.h>

#include "capture_impl.h"

/* Does a command in [from, to) name value v? */
static bool named_in(const clg_capture *c, int v, int from, int to)
{
    for (int i = from; i < to; i++) {
        const cap_cmd *cmd = &c->cmds[i];
        if (cmd->kind == CAP_KERNEL) {
            const cap_launch *l = &c->launches[cmd->launch];
            for (int a = 0; a < l->nargs; a++)
                if (l->val[a] == v) return true;
        } else if ((cmd->kind == CAP_WRITE || cmd->kind == CAP_COPY) && (cmd->dst == v || cmd->src == v)) {
            return true;
        }
    }
    return false;
}

/* Commands [from, to) name value `to_v` where they named `from_v`. */
static void rename_value(clg_capture *c, int from_v, int to_v, int from, int to)
{
    for (int i = from; i < to; i++) {
        cap_cmd *cmd = &c->cmds[i];
        if (cmd->kind == CAP_KERNEL) {
            cap_launch *l = &c->launches[cmd->launch];
            for (int a = 0; a < l->nargs; a++)
                if (l->val[a] == from_v) l->val[a] = to_v;
        } else if (cmd->kind == CAP_WRITE || cmd->kind == CAP_COPY) {
            if (cmd->dst == from_v) cmd->dst = to_v;
            if (cmd->src == from_v) cmd->src = to_v;
        }
    }
}

/* The copy starting at command i is redundant: its whole source was made in the step,
 * is read by nothing after it, and the destination (at least as large) is not named
 * while the source lives. Then the source's commands write the destination instead. */
static bool elide_copy(clg_capture *c, int i)
{
    cap_cmd *cmd = &c->cmds[i];
    if (cmd->kind != CAP_KERNEL || !cmd->copy_note || cmd->src == cmd->dst || c->launches[cmd->launch].refresh)
        return false;
    cap_value *a = &c->vals[cmd->src], *b = &c->vals[cmd->dst];
    int end = i + cmd->copy_cmds;   /* the command after the copy's last enqueue */
    if (!a->born || !a->dead || a->input || a->last != end - 1 || a->first >= i || cmd->src_off || cmd->dst_off ||
        a->asked > cmd->bytes || cmd->bytes > b->size || named_in(c, cmd->dst, a->first, i))
        return false;
    rename_value(c, cmd->src, cmd->dst, a->first, i);
    if (b->first < 0 || a->first < b->first) b->first = a->first;
    a->first = a->last = -1;                      /* unused now: no slot, nothing held */
    c->launches[cmd->launch].dropped = true;
    for (int j = i; j < end; j++) c->cmds[j].kind = CAP_GONE;
    c->removed++;
    return true;
}

static void elide_copies(clg_capture *c)
{
    for (int i = 0; i < c->ncmds; i++) elide_copy(c, i);
}

/* Is command i a one-enqueue relu_flat from the start of value *y into the start of
 * value *z, over n elements? */
static bool plain_relu(const clg_capture *c, int i, int *y, int *z, int *n)
{
    const cap_cmd *cmd = &c->cmds[i];
    if (cmd->kind != CAP_KERNEL) return false;
    const cap_launch *l = &c->launches[cmd->launch];
    if (strcmp(l->k->name, "relu_flat") || l->nargs != 7 || l->refresh) return false;
    if ((i + 1 < c->ncmds && c->cmds[i + 1].kind == CAP_KERNEL && c->cmds[i + 1].launch == cmd->launch) ||
        (i > 0 && c->cmds[i - 1].kind == CAP_KERNEL && c->cmds[i - 1].launch == cmd->launch))
        return false;
    const clg_arg *a = l->args;   /* n, y, oy, a, oa, s0, s1 */
    if (a[0].kind != CLG_ARG_I32 || a[2].kind != CLG_ARG_I32 || a[4].kind != CLG_ARG_I32 || a[2].v.i32 || a[4].v.i32)
        return false;
    *n = a[0].v.i32;
    *z = l->val[1];
    *y = l->val[3];
    return *y >= 0 && *z >= 0 && *y != *z;
}

/* Fold the ReLU at command i into the launches that write its input's final values
 * (clg__cap_note_final), when those are the input's only writers after whatever
 * prepared it (a bias), and the ReLU is its last reader. */
static bool fuse_relu(clg_capture *c, int i)
{
    int y, z, n;
    if (!plain_relu(c, i, &y, &z, &n)) return false;
    cap_value *yv = &c->vals[y], *zv = &c->vals[z];
    /* y may still be held (by the caller's scope) at the capture's end: what a replay
     * defines is only what clg_graph_output names, and a y that no command names any
     * more cannot be named */
    if (!yv->born || yv->input || yv->last != i || !zv->born || zv->first != i || yv->asked != zv->asked)
        return false;
    int first_final = -1;
    clg_kernel *variant[16];
    int launches[16], nl = 0;
    for (int j = yv->first; j < i; j++) {
        const cap_cmd *cmd = &c->cmds[j];
        bool names = named_in(c, y, j, j + 1);
        if (!names) continue;
        if (cmd->kind == CAP_KERNEL && cmd->final_dst == y) {
            if ((size_t)n != cmd->final_elems || nl == 16) return false;
            if (first_final < 0) first_final = j;
            if (!nl || launches[nl - 1] != cmd->launch) launches[nl++] = cmd->launch;
        } else if (first_final >= 0) {
            return false;   /* something else touches y after its final values */
        }
    }
    if (!nl) return false;
    for (int k = 0; k < nl; k++) {
        const cap_launch *l = &c->launches[launches[k]];
        if (l->refresh || !(variant[k] = clg__kernel_variant(c->dev, l->k, "-DCLG_EPI_RELU"))) return false;
    }
    for (int k = 0; k < nl; k++) c->launches[launches[k]].k = variant[k];
    rename_value(c, y, z, yv->first, i);
    zv->first = yv->first;
    yv->first = yv->last = -1;
    c->launches[c->cmds[i].launch].dropped = true;
    c->cmds[i].kind = CAP_GONE;
    c->fused++;
    return true;
}

static void fuse_relus(clg_capture *c)
{
    for (int i = 0; i < c->ncmds; i++) fuse_relu(c, i);
}

/* ---- elementwise pairs ---------------------------------------------------------------------- */

/* A launch of a CLG_ELEMENTWISE row's flat kernel (NAME_flat: n, y, oy, a, oa, [b, ob,]
 * s0, s1) of binary, scalar, relu or unary.cl in float storage: its enqueues (whole
 * groups, then a tail: src/device/launch.c) commands i to i + ncmds - 1, over n items. */
typedef struct ew_launch {
    char op[48], program[16], options[256];
    int arity, n, ncmds;
    int y, a, b;   /* values (b: -1 for one operand) */
} ew_launch;

static bool ew_of(const clg_capture *c, int i, ew_launch *e)
{
    const cap_cmd *cmd = &c->cmds[i];
    if (cmd->kind != CAP_KERNEL || (i > 0 && c->cmds[i - 1].kind == CAP_KERNEL && c->cmds[i - 1].launch == cmd->launch))
        return false;   /* not the launch's first enqueue */
    const cap_launch *l = &c->launches[cmd->launch];
    const char *name = l->k->name;
    size_t len = strlen(name);
    if (l->refresh || l->rng || l->k->native || len < 6 || len - 5 >= sizeof e->op ||
        strcmp(name + len - 5, "_flat") || (l->nargs != 7 && l->nargs != 9))
        return false;
    size_t items = 0;
    e->ncmds = 0;
    for (int j = i; j < c->ncmds && c->cmds[j].kind == CAP_KERNEL && c->cmds[j].launch == cmd->launch; j++) {
        if (c->cmds[j].dims != 1) return false;
        items += c->cmds[j].global[0];
        e->ncmds++;
    }
    if (!clg__kernel_origin(l->k, e->program, sizeof e->program, e->options, sizeof e->options)) return false;
    static const char *const programs[] = {"binary", "scalar", "relu", "unary"};
    bool known = false;
    for (int p = 0; p < 4; p++) known = known || !strcmp(e->program, programs[p]);
    if (!known || strstr(e->options, "STORE") || (!strstr(e->options, "CLG_F32") && !strstr(e->options, "CLG_F64")))
        return false;
    const clg_arg *a = l->args;
    e->arity = l->nargs == 9 ? 2 : 1;
    for (int k = 0; k < 1 + 2 * (e->arity + 1); k++)   /* n, then (buffer, offset) pairs */
        if (a[k].kind != (k && k % 2 ? CLG_ARG_BUF : CLG_ARG_I32) || (k % 2 && l->val[k] < 0)) return false;
    e->n = a[0].v.i32;
    e->y = l->val[1];
    e->a = l->val[3];
    e->b = e->arity == 2 ? l->val[5] : -1;
    snprintf(e->op, sizeof e->op, "%.*s", (int)(len - 5), name);
    return e->n > 0 && items == (size_t)e->n;
}

/* Value v's first and last commands after commands [j0, j1] moved to [i0, i1]. */
static void moved(clg_capture *c, int v, int j0, int j1, int i0, int i1)
{
    if (v < 0) return;
    if (c->vals[v].first >= j0 && c->vals[v].first <= j1) c->vals[v].first = i0;
    if (c->vals[v].last >= j0 && c->vals[v].last <= j1) c->vals[v].last = i1;
}

/* The launch at command i and the next one (at j) as one launch of ew_fused, with i's
 * enqueues (exactly n items, as j's), where j's op reads i's whole result (at the same
 * offset) and writes none of i's operands; i's result is left out where nothing else
 * names it. A kernel that does not build leaves both as they were. */
static bool fuse_pair(clg_capture *c, int i)
{
    ew_launch A, B;
    if (!ew_of(c, i, &A)) return false;
    int j = i + A.ncmds;
    while (j < c->ncmds && c->cmds[j].kind == CAP_GONE) j++;
    if (j >= c->ncmds || !ew_of(c, j, &B) || A.n != B.n || strcmp(A.options, B.options)) return false;
    int ia = i + A.ncmds - 1, jb = j + B.ncmds - 1;   /* the last enqueues */
    cap_launch *la = &c->launches[c->cmds[i].launch], *lb = &c->launches[c->cmds[j].launch];
    /* A's result at B's operand 0 or 1 at the same offset; not both, not in place */
    int pos = B.a == A.y && lb->args[4].v.i32 == la->args[2].v.i32   ? 0
              : B.b == A.y && lb->args[6].v.i32 == la->args[2].v.i32 ? 1
                                                                     : -1;
    int other = pos == 0 ? B.b : B.a;
    if (pos < 0 || other == A.y || A.y == A.a || A.y == A.b || B.y == A.y || B.y == A.a || B.y == A.b) return false;
    const cap_value *v = &c->vals[A.y];
    int keep = !(v->born && v->dead && !v->input && v->first == i && v->last == jb);
    char prog[64], opts[512];
    if (!strcmp(A.program, B.program)) snprintf(prog, sizeof prog, "%s+ewfuse", A.program);
    else snprintf(prog, sizeof prog, "%s+%s+ewfuse", A.program, B.program);
    snprintf(opts, sizeof opts, "%s -DCLG_FUSE_A=%s_ew -DCLG_FUSE_B=%s_ew -DCLG_FUSE_B_POS=%d -DCLG_FUSE_KEEP=%d",
             A.options, A.op, B.op, pos, keep);
    clg_saved_error saved = clg__error_save(c->dev);
    clg_kernel *k = clg__kernel_get(c->dev, prog, opts, "ew_fused");
    clg__error_restore(c->dev, &saved);
    clg__error_drop(&saved);
    for (int e = i; k && e <= ia; e++)   /* A's groups, which the fused kernel takes on */
        if (c->cmds[e].has_local && c->cmds[e].local[0] > k->wg_max) k = NULL;
    clg_arg *args = malloc(15 * sizeof *args);
    int *val = malloc(15 * sizeof *val);
    if (!k || !args || !val) {
        free(args);
        free(val);
        return false;
    }
    /* A's n, v, ov, a, oa, b, ob (a again for one operand), s0, s1; B's y, oy, other
     * operand (A's a for one), t0, t1 */
    int from[15] = {0, 1, 2, 3, 4, A.arity == 2 ? 5 : 3, A.arity == 2 ? 6 : 4, la->nargs - 2, la->nargs - 1};
    for (int k2 = 0; k2 < 9; k2++) args[k2] = la->args[from[k2]], val[k2] = la->val[from[k2]];
    int ob = B.arity == 1 ? -1 : pos == 0 ? 5 : 3;
    const cap_launch *src[6] = {lb, lb, ob < 0 ? la : lb, ob < 0 ? la : lb, lb, lb};
    int at[6] = {1, 2, ob < 0 ? 3 : ob, ob < 0 ? 4 : ob + 1, lb->nargs - 2, lb->nargs - 1};
    for (int k2 = 0; k2 < 6; k2++) args[9 + k2] = src[k2]->args[at[k2]], val[9 + k2] = src[k2]->val[at[k2]];
    if (!keep) {   /* v unused: B's result stands in for it */
        args[1] = args[9], args[2] = args[10];
        val[1] = val[9];
    }
    for (int k2 = 0; k2 < lb->nargs; k2++) moved(c, lb->val[k2], j, jb, i, ia);
    if (keep) moved(c, A.y, j, jb, i, ia);
    else c->vals[A.y].first = c->vals[A.y].last = -1;
    free(la->args);
    free(la->val);
    la->args = args;
    la->val = val;
    la->nargs = 15;
    la->k = k;
    lb->dropped = true;
    for (int k2 = j; k2 <= jb; k2++) c->cmds[k2].kind = CAP_GONE;
    c->chains++;
    return true;
}

static void fuse_chains(clg_capture *c)
{

    for (int i = 0; i < c->ncmds; i++) fuse_pair(c, i);
}

typedef struct slot_plan { size_t size; int *members; int n, cap; } slot_plan;

static bool overlaps(const clg_capture *c, const slot_plan *s, const cap_value *x)
{
    for (int i = 0; i < s->n; i++) {
        const cap_value *y = &c->vals[s->members[i]];
        if (x->first <= y->last && y->first <= x->last) return true;
    }
    return false;
}

static const clg_capture *sort_c;   /* qsort has no context argument */
static int by_size_desc(const void *a, const void *b)
{
    size_t sa = sort_c->vals[*(const int *)a].size, sb = sort_c->vals[*(const int *)b].size;
    if (sa != sb) return sa < sb ? 1 : -1;
    return *(const int *)a - *(const int *)b;
}

static bool planned(const cap_value *x) { return x->dead && x->first >= 0; }

/* Assign every planned value a slot; allocate the slots. */
static clg_status plan_memory(clg_capture *c)
{
    clg_device *dev = c->dev;
    int n = 0, *order = malloc((size_t)(c->nvals ? c->nvals : 1) * sizeof *order);
    slot_plan *slots = calloc((size_t)(c->nvals ? c->nvals : 1), sizeof *slots);
    int *slot_of = malloc((size_t)(c->nvals ? c->nvals : 1) * sizeof *slot_of);
    clg_status st = order && slots && slot_of ? CLG_OK : clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_graph_end: out of host memory");
    for (int v = 0; !st && v < c->nvals; v++)
        if (planned(&c->vals[v])) order[n++] = v;
    sort_c = c;
    if (!st) qsort(order, (size_t)n, sizeof *order, by_size_desc);
    int nslots = 0;
    for (int i = 0; !st && i < n; i++) {
        const cap_value *x = &c->vals[order[i]];
        int s = 0;
        while (s < nslots && overlaps(c, &slots[s], x)) s++;
        if (s == nslots) slots[nslots++].size = x->size;
        slot_plan *sp = &slots[s];
        if (sp->n == sp->cap) {
            int ncap = sp->cap ? sp->cap * 2 : 8;
            int *nm = realloc(sp->members, (size_t)ncap * sizeof *nm);
            if (!nm) {
                st = clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_graph_end: out of host memory");
                break;
            }
            sp->members = nm;
            sp->cap = ncap;
        }
        sp->members[sp->n++] = order[i];
        slot_of[order[i]] = s;
        c->planned++;
        c->planned_bytes += x->size;
    }
    c->slots = st ? NULL : calloc((size_t)(nslots ? nslots : 1), sizeof *c->slots);
    if (!st && !c->slots) st = clg__fail(dev, CLG_ERR_OUT_OF_MEMORY, "clg_graph_end: out of host memory");
    for (int s = 0; !st && s < nslots; s++) {
        c->slots[s] = clg__buffer_alloc(dev, slots[s].size);
        if (!c->slots[s]) st = dev->status;
        else {
            c->nslots++;
            c->slot_bytes += c->slots[s]->size;
        }
    }
    for (int i = 0; !st && i < n; i++) c->vals[order[i]].use = c->slots[slot_of[order[i]]];
    for (int s = 0; slots && s < nslots; s++) free(slots[s].members);
    free(slots);
    free(order);
    free(slot_of);
    return st;
}

/* Values that outlive the capture, or were made before it, are used as they are. */
static void hold_the_rest(clg_capture *c)
{
    for (int v = 0; v < c->nvals; v++) {
        cap_value *x = &c->vals[v];
        if (x->first < 0 || planned(x)) continue;
        x->use = x->buf;
        clg__buffer_retain(x->use);
        c->held_bytes += x->size;
    }
}

/* A kernel object of its own for every launch, arguments set to the planned buffers. */
static clg_status make_kernels(clg_capture *c)
{
    clg_device *dev = c->dev;
    for (int i = 0; i < c->nlaunches; i++) {
        cap_launch *l = &c->launches[i];
        if (l->dropped) continue;
        for (int a = 0; a < l->nargs; a++)
            if (l->val[a] >= 0) l->args[a].v.buf = c->vals[l->val[a]].use;
        if (l->k->native) continue;   /* a host function: replay passes l->args as they are */
        l->clone = clg__kobj_clone(dev, l->k);
        if (!l->clone) return dev->status;
        clg_status st = clg__kobj_set_args(dev, l->clone, l->k->name, l->args, l->nargs);
        if (st != CLG_OK) return st;
    }
    return CLG_OK;
}

clg_status clg__cap_plan(clg_capture *c)
{
    /* CLG_GRAPH_SKIP=copies,relu,chains keeps them, to measure what each pass gains */
    const char *skip = getenv("CLG_GRAPH_SKIP");
    if (!skip || !strstr(skip, "copies")) elide_copies(c);
    if (!skip || !strstr(skip, "relu")) fuse_relus(c);
    if (!skip || !strstr(skip, "chains")) fuse_chains(c);
    clg_status st = plan_memory(c);
    if (st == CLG_OK) {
        hold_the_rest(c);
        st = make_kernels(c);
    }
    return st;
}

/* ---- values as the public half (src/graph/) sees them ------------------------------------ */

int clg__capture_value(const clg_capture *c, const clg_buffer *b)
{
    for (int v = c->nvals; v-- > 0;)
        if (c->vals[v].buf == b && !c->vals[v].dead && c->vals[v].first >= 0) return v;
    return -1;
}

clg_buffer *clg__capture_buffer(const clg_capture *c, int v) { return c->vals[v].use; }

void clg__capture_mark_input(clg_capture *c, int v) { c->vals[v].input = true; }

clg_status clg__capture_rebind(clg_capture *c, int v, clg_buffer *b)
{
    cap_value *x = &c->vals[v];
    if (x->use == b) return CLG_OK;
    for (int i = 0; i < c->nlaunches; i++) {
        cap_launch *l = &c->launches[i];
        for (int a = 0; a < l->nargs && !l->dropped; a++) {
            if (l->val[a] != v) continue;
            l->args[a].v.buf = b;
            if (l->k->native) continue;
            clg_status st = clg__kobj_set_arg(c->dev, l->clone, l->k->name, clg__arg_slot(l->args, a), &l->args[a]);
            if (st != CLG_OK) return st;
        }
    }
    clg__buffer_retain(b);
    clg__buffer_release(x->use);
    x->use = b;
    return CLG_OK;
}

/* The first value made before the capture that only the capture holds now, or -1. */
static int orphan(const clg_capture *c)
{
    for (int v = 0; v < c->nvals; v++) {
        const cap_value *x = &c->vals[v];
        if (x->use && !x->born && !x->dead && !x->input && x->use->refs <= 1) return v;
    }
    return -1;
}

bool clg__capture_stale(const clg_capture *c) { return orphan(c) >= 0; }

clg_status clg__capture_check(clg_capture *c)
{
    int v = orphan(c);
    if (v < 0) return CLG_OK;
    const cap_value *x = &c->vals[v];
    const cap_cmd *first = &c->cmds[x->first];
    const char *who = first->kind == CAP_KERNEL ? c->launches[first->launch].k->name : "a copy or write";
    return clg__fail(c->dev, CLG_ERR_INVALID_ARGUMENT,
                     "clg_graph_replay: a buffer of %zu bytes that the captured step used (first by %s) is held by "
                     "nothing but the graph now: a parameter, gradient or optimizer state was replaced or freed "
                     "since the capture; capture the step again", x->size, who);
}

clg_capture_stats clg__capture_stats(const clg_capture *c)
{
    clg_capture_stats s = {.launches = c->nlaunches - c->removed - c->fused - c->chains, .refreshes = c->refreshes, .values = c->nvals,
                           .planned = c->planned, .slots = c->nslots, .planned_bytes = c->planned_bytes,
                           .slot_bytes = c->slot_bytes, .held_bytes = c->held_bytes, .removed = c->removed,
                           .fused = c->fused, .chains = c->chains};
    for (int i = 0; i < c->ncmds; i++) {
        switch (c->cmds[i].kind) {
        case CAP_KERNEL: s.enqueues++; break;
        case CAP_WRITE: s.writes++; break;
        case CAP_COPY: s.copies++; break;
        case CAP_HOST: s.host_steps++; break;
        case CAP_GONE: break;
        }
    }
    return s;
}
