// random.cl: uniform and normal random numbers from the Philox generator in common.cl.
// Work-item j draws block
// (counter + j) and writes elements PER*j .. PER*j + PER-1: 4 per block for float
// (24 bits each), 2 for double (53 bits from two words).

#ifdef CLG_F64
#define PER 2
// [0, 1) with 53 random bits
inline void uniforms(uint4 r, T *u)
{
    u[0] = ((double)(r.x >> 5) * 67108864.0 + (double)(r.y >> 6)) * (1.0 / 9007199254740992.0);
    u[1] = ((double)(r.z >> 5) * 67108864.0 + (double)(r.w >> 6)) * (1.0 / 9007199254740992.0);
}
#else
#define PER 4
// [0, 1) with 24 random bits
inline void uniforms(uint4 r, T *u)
{
    u[0] = (T)(r.x >> 8) * (T)(1.0f / 16777216.0f);
    u[1] = (T)(r.y >> 8) * (T)(1.0f / 16777216.0f);
    u[2] = (T)(r.z >> 8) * (T)(1.0f / 16777216.0f);
    u[3] = (T)(r.w >> 8) * (T)(1.0f / 16777216.0f);
}
#endif

__kernel void rand_uniform(int n, __global T *y, int oy, uint seed_lo, uint seed_hi, uint ctr_lo,
                           uint ctr_hi, const T lo, const T hi)
{
    int j = get_global_id(0);
    if (j * PER >= n) return;
    T u[4];
    uniforms(clg_philox_block(j, seed_lo, seed_hi, ctr_lo, ctr_hi), u);
    for (int k = 0; k < PER && j * PER + k < n; k++) y[oy + j * PER + k] = lo + (hi - lo) * u[k];
}

// Box-Muller on pairs of uniforms: 1 - u is in (0, 1], so the log is finite.
__kernel void rand_normal(int n, __global T *y, int oy, uint seed_lo, uint seed_hi, uint ctr_lo,
                          uint ctr_hi, const T mean, const T std)
{
    int j = get_global_id(0);
    if (j * PER >= n) return;
    T u[4], z[4];
    uniforms(clg_philox_block(j, seed_lo, seed_hi, ctr_lo, ctr_hi), u);
    for (int p = 0; p < PER; p += 2) {
        T r = sqrt((T)-2 * log((T)1 - u[p]));
        T theta = (T)6.283185307179586 * u[p + 1];
        z[p] = r * cos(theta);
        z[p + 1] = r * sin(theta);
    }
    for (int k = 0; k < PER && j * PER + k < n; k++) y[oy + j * PER + k] = mean + std * z[k];
}
