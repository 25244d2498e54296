// rnn.cl: the pointwise half of one time step of RNN, LSTM and GRU layers
// (src/tensor/rnn.c), forward and backward, one work-item per (batch row b, unit j).
//
// The host computes each step's products as GEMMs: xw, the input projection x W_ih^T
// of every step at once, and hw = h_{t-1} W_hh^T for this step. These kernels add both
// biases, apply the gates and write the new state, so a step is one GEMM and one launch
// (and the biases' gradients one column sum for the whole sequence). Gates are laid out as PyTorch's: row b of a [B, G H] matrix
// holds gate k of unit j at k H + j (LSTM: i, f, g, o; GRU: r, z, n).
//
// Operands are bare buffers with element offsets (steps are slices of [T, B, .]
// tensors). The optional biases come with flags; the host passes some valid buffer in
// their place. Every kernel runs over exactly H x B items (clg__launch_rows): item
// (j, b) is unit j of batch row b, with no bounds check and no division, which keeps
// the work-group loop over j open to POCL's vectorizer.

// 1 / (1 + e^-x): e^-x overflows to inf below about -88 (float) and gives 0, as it should;
// NaN stays NaN. unary.cl's sigmoid splits on the sign instead (a branch per element).
inline T rnn_sigmoid(T x) { return (T)1 / ((T)1 + exp(-x)); }
// tanh through exp, which POCL vectorizes; its tanh is a scalar call per element: the
// LSTM's forward kernel took 600 us a step with it and 135 with this (B = 32, H = 256).
// Exactly +-1 far out (exp gives inf or 0) and NaN for NaN; near 0 the subtraction
// costs relative precision, not absolute: within 2e-7 of tanh in float32 (over
// [-20, 20] in steps of 1e-5, with glibc's expf).
inline T rnn_tanh(T x) { return (T)1 - (T)2 / ((T)1 + exp((T)2 * x)); }

inline T rnn_bias(int has_b, __global const T *b, int k) { return has_b ? b[k] : (T)0; }
// The biases, each contiguous from its element offset (obi, obh).
#define RNN_BIASES int has_bi, __global const T *bih, int obi, int has_bh, __global const T *bhh, int obh
// Both biases of gate row k.
#define RNN_B(k) (rnn_bias(has_bi, bih + obi, k) + rnn_bias(has_bh, bhh + obh, k))

// ---- Elman RNN: h = act(xw + b_ih + hw + b_hh), tanh (relu = 0) or relu (relu = 1) -----------
__kernel void rnn_fwd(int H, int relu, __global const T *xw, int xo, __global const T *hw, RNN_BIASES,
                      __global T *h, int ho)
{
    int j = get_global_id(0), i = get_global_id(1) * H + j;
    T pre = xw[xo + i] + hw[i] + RNN_B(j);
    h[ho + i] = relu ? (pre < (T)0 ? (T)0 : pre) : rnn_tanh(pre);
}

// dpre = (dy + dh) act'(h), into dg (the gradient of xw's step and of hw).
__kernel void rnn_bwd(int H, int relu, __global const T *dy, int dyo, __global const T *dh,
                      __global const T *h, int ho, __global T *dg, int dgo)
{
    int i = get_global_id(1) * H + get_global_id(0);
    T g = dy[dyo + i] + dh[i], y = h[ho + i];
    dg[dgo + i] = relu ? (y > (T)0 ? g : (T)0) : g * ((T)1 - y * y);
}

// ---- LSTM: i, f, o = sigmoid, g = tanh; c = f c_prev + i g; h = o tanh(c) ------------------------
// act [B, 4H] keeps the gates after their activations for the backward pass.
__kernel void lstm_fwd(int H, __global const T *xw, int xo, __global const T *hw, RNN_BIASES,
                       __global const T *cp, int cpo, __global T *act, int ao, __global T *c, int co, __global T *h, int ho)
{
    int j = get_global_id(0), b = get_global_id(1), idx = b * H + j, row = b * 4 * H + j;
    T pi = xw[xo + row] + hw[row] + RNN_B(j);
    T pf = xw[xo + row + H] + hw[row + H] + RNN_B(H + j);
    T pg = xw[xo + row + 2 * H] + hw[row + 2 * H] + RNN_B(2 * H + j);
    T po = xw[xo + row + 3 * H] + hw[row + 3 * H] + RNN_B(3 * H + j);
    T gi = rnn_sigmoid(pi), gf = rnn_sigmoid(pf), gg = rnn_tanh(pg), go = rnn_sigmoid(po);
    T cprev = cp[cpo + idx];
    T cn = gf * cprev + gi * gg;
    act[ao + row] = gi;
    act[ao + row + H] = gf;
    act[ao + row + 2 * H] = gg;
    act[ao + row + 3 * H] = go;
    c[co + idx] = cn;
    h[ho + idx] = go * rnn_tanh(cn);
}

// dh = dy + dh_rec (the gradient of h_t from the output and from step t+1); dc carries
// the cell's gradient from step t+1 in and leaves the one of c_{t-1} (in place: each
// item reads and writes its own element). dg [B, 4H] gets the gates' pre-activation
// gradients: the gradient of this step's xw and hw.
__kernel void lstm_bwd(int H, __global const T *dy, int dyo, __global const T *dh, __global const T *act,
                       int ao, __global const T *c, int co, __global const T *cp, int cpo,
                       __global T *dc, __global T *dg, int dgo)
{
    int j = get_global_id(0), b = get_global_id(1), idx = b * H + j, row = b * 4 * H + j;
    T gi = act[ao + row], gf = act[ao + row + H], gg = act[ao + row + 2 * H], go = act[ao + row + 3 * H];
    T tc = rnn_tanh(c[co + idx]);
    T cprev = cp[cpo + idx];
    T gh = dy[dyo + idx] + dh[idx];
    T gc = dc[idx] + gh * go * ((T)1 - tc * tc);
    dg[dgo + row] = gc * gg * gi * ((T)1 - gi);
    dg[dgo + row + H] = gc * cprev * gf * ((T)1 - gf);
    dg[dgo + row + 2 * H] = gc * gi * ((T)1 - gg * gg);
    dg[dgo + row + 3 * H] = gh * tc * go * ((T)1 - go);
    dc[idx] = gc * gf;
}

// ---- GRU: r, z = sigmoid; n = tanh(xw_n + b_in + r (hw_n + b_hn)); h = (1 - z) n + z h_prev
// act [B, 3H] keeps r, z, n; hn [B, H] keeps hw_n + b_hn (the backward's dr needs it).
__kernel void gru_fwd(int H, __global const T *xw, int xo, __global const T *hw, RNN_BIASES,
                      __global const T *hp, int hpo, __global T *act, int ao, __global T *hn, int hno, __global T *h, int ho)
{
    int j = get_global_id(0), b = get_global_id(1), idx = b * H + j, row = b * 3 * H + j;
    T r = rnn_sigmoid(xw[xo + row] + hw[row] + RNN_B(j));
    T z = rnn_sigmoid(xw[xo + row + H] + hw[row + H] + RNN_B(H + j));
    T hwn = hw[row + 2 * H] + rnn_bias(has_bh, bhh + obh, 2 * H + j);
    T n = rnn_tanh(xw[xo + row + 2 * H] + rnn_bias(has_bi, bih + obi, 2 * H + j) + r * hwn);
    act[ao + row] = r;
    act[ao + row + H] = z;
    act[ao + row + 2 * H] = n;
    hn[hno + idx] = hwn;
    h[ho + idx] = ((T)1 - z) * n + z * hp[hpo + idx];
}

// dxw gets the gradient of this step's xw (r, z, n pre-activations), dhw the one of
// hw + b_hh (the same but r dn for n). dh comes in as the gradient from step t+1 and
// leaves as its direct part z dh_total: the host adds dhw W_hh to it (a GEMM, beta 1).
__kernel void gru_bwd(int H, __global const T *dy, int dyo, __global T *dh, __global const T *act, int ao,
                      __global const T *hn, int hno, __global const T *hp, int hpo, __global T *dxw, int dxo,
                      __global T *dhw, int dho)
{
    int j = get_global_id(0), b = get_global_id(1), idx = b * H + j, row = b * 3 * H + j;
    T r = act[ao + row], z = act[ao + row + H], n = act[ao + row + 2 * H];
    T gh = dy[dyo + idx] + dh[idx];
    T gn = gh * ((T)1 - z) * ((T)1 - n * n);
    T gz = gh * (hp[hpo + idx] - n) * z * ((T)1 - z);
    T gr = gn * hn[hno + idx] * r * ((T)1 - r);
    dxw[dxo + row] = gr;
    dxw[dxo + row + H] = gz;
    dxw[dxo + row + 2 * H] = gn;
    dhw[dho + row] = gr;
    dhw[dho + row + H] = gz;
    dhw[dho + row + 2 * H] = gn * r;
    dh[idx] = gh * z;
}
