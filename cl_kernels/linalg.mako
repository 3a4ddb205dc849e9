## Dense factorizations of small and medium matrices, batched, for float dtype `dt` (float32,
## float64). Every matrix is contiguous row-major [n, n] (or [n, nrhs]) inside a contiguous batch.
##
## lu_factor: LU with partial pivoting, in place, one work-group per matrix. For each column k
## the work-group finds the pivot (a tree over local memory: the largest |a[i, k]|, the first
## such row on ties), swaps rows, scales the column and updates the trailing rows, each
## work-item owning rows i = lid, lid + L, ...; barriers separate the phases. Pivots are written
## 1-based as LAPACK and torch give them; info is the first zero pivot (1-based), 0 if none. A
## zero pivot skips its elimination step, as LAPACK's getrf does.
##
## lu_solve: one work-item per (matrix, right-hand side column): the row swaps, then forward
## substitution with the unit lower factor and back substitution with the upper one.
##
## cholesky: A = L L^T for symmetric positive-definite A, in place (the lower triangle), one
## work-group per matrix, column by column; info is the first column whose pivot is not
## positive (1-based), 0 if none.
##
## Complex dtypes (complex64, complex128: T is float2 / double2, R its part's type) render
## lu_factor and lu_solve from the same code through MUL / DIV / ISZERO (common.mako's cmul and
## cdiv) and MAG, the pivot's size: |re| + |im| for complex, as LAPACK's zgetrf (izamax) picks
## its pivots, so the pivots are torch's. Cholesky of Hermitian positive-definite A = L L^H
## reads the same way with CONJ, RE (a diagonal's real part) and RV (a real value as T).
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% T = dt.ct; R = dt.rt if dt.kind == "c" else dt.ct %>
#define GROUP_MAX 256
% if dt.kind == "c":
${c.complex_helpers(T, R)}
#define MUL(a, b) cmul((a), (b))
#define DIV(a, b) cdiv((a), (b))
#define MAG(v) (fabs((v).x) + fabs((v).y))
#define ISZERO(v) ((v).x == 0 && (v).y == 0)
#define CONJ(v) cconj(v)
#define RE(v) ((v).x)
#define RV(r) ((${T})((r), (${R})0))
% else:
#define MUL(a, b) ((a) * (b))
#define DIV(a, b) ((a) / (b))
#define MAG(v) fabs(v)
#define ISZERO(v) ((v) == 0)
#define CONJ(v) (v)
#define RE(v) (v)
#define RV(r) (r)
% endif

__kernel void lu_factor(__global ${T} *A, __global int *piv, __global int *info, const int n)
{
    const long b = get_group_id(0);
    __global ${T} *a = A + b * (long)n * n;
    const int lid = get_local_id(0), L = get_local_size(0);
    __local ${R} best_v[GROUP_MAX];
    __local int best_i[GROUP_MAX];
    if (lid == 0)
        info[b] = 0;
    for (int k = 0; k < n; ++k) {
        ${R} bv = -1;
        int bi = k;
        for (int i = k + lid; i < n; i += L) {
            ${R} v = MAG(a[(long)i * n + k]);
            if (v > bv) { bv = v; bi = i; }
        }
        best_v[lid] = bv;
        best_i[lid] = bi;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = L / 2; s > 0; s >>= 1) {             /* L is a power of two */
            if (lid < s) {
                ${R} o = best_v[lid + s];
                int oi = best_i[lid + s];
                if (o > best_v[lid] || (o == best_v[lid] && oi < best_i[lid])) {
                    best_v[lid] = o;
                    best_i[lid] = oi;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const int p = best_i[0];
        /* everyone has read best_i[0] before it changes, and column k (read by the search,
           by other work-items than the ones that swap its rows) before the swap */
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        if (lid == 0)
            piv[b * n + k] = p + 1;
        if (p != k) {
            for (int j = lid; j < n; j += L) {
                ${T} t = a[(long)k * n + j];
                a[(long)k * n + j] = a[(long)p * n + j];
                a[(long)p * n + j] = t;
            }
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        const ${T} pivot = a[(long)k * n + k];
        if (ISZERO(pivot)) {                               /* the same for the whole group */
            if (lid == 0 && info[b] == 0)
                info[b] = k + 1;
            barrier(CLK_GLOBAL_MEM_FENCE);
            continue;
        }
        for (int i = k + 1 + lid; i < n; i += L) {
            const ${T} l = DIV(a[(long)i * n + k], pivot);
            a[(long)i * n + k] = l;
            for (int j = k + 1; j < n; ++j)
                a[(long)i * n + j] -= MUL(l, a[(long)k * n + j]);
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

__kernel void lu_solve(__global const ${T} *LU, __global const int *piv, __global ${T} *B,
                       const int n, const int nrhs, const long count)
{
    const long t = get_global_id(0);
    if (t >= count)
        return;
    const long b = t / nrhs;
    const int col = t - b * nrhs;
    __global const ${T} *lu = LU + b * (long)n * n;
    __global const int *pv = piv + b * n;
    __global ${T} *x = B + b * (long)n * nrhs + col;
    for (int k = 0; k < n; ++k) {                          /* the row swaps, in order */
        const int p = pv[k] - 1;
        if (p != k) {
            ${T} tmp = x[(long)k * nrhs];
            x[(long)k * nrhs] = x[(long)p * nrhs];
            x[(long)p * nrhs] = tmp;
        }
    }
    for (int i = 1; i < n; ++i) {                          /* L y = P b, L unit lower */
        ${T} s = x[(long)i * nrhs];
        for (int j = 0; j < i; ++j)
            s -= MUL(lu[(long)i * n + j], x[(long)j * nrhs]);
        x[(long)i * nrhs] = s;
    }
    for (int i = n - 1; i >= 0; --i) {                     /* U x = y */
        ${T} s = x[(long)i * nrhs];
        for (int j = i + 1; j < n; ++j)
            s -= MUL(lu[(long)i * n + j], x[(long)j * nrhs]);
        x[(long)i * nrhs] = DIV(s, lu[(long)i * n + i]);
    }
}

__kernel void cholesky(__global ${T} *A, __global int *info, const int n)
{
    const long b = get_group_id(0);
    __global ${T} *a = A + b * (long)n * n;
    const int lid = get_local_id(0), L = get_local_size(0);
    __local ${T} diag;
    if (lid == 0)
        info[b] = 0;
    for (int j = 0; j < n; ++j) {
        if (lid == 0) {
            ${R} d = RE(a[(long)j * n + j]);
            for (int k = 0; k < j; ++k)
                d -= RE(MUL(a[(long)j * n + k], CONJ(a[(long)j * n + k])));
            if (!(d > 0) && info[b] == 0)                  /* not positive, or NaN */
                info[b] = j + 1;
            d = d > 0 ? sqrt(d) : (${R})NAN;
            a[(long)j * n + j] = RV(d);
            diag = RV(d);
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        const ${T} djj = diag;
        for (int i = j + 1 + lid; i < n; i += L) {
            ${T} s = a[(long)i * n + j];
            for (int k = 0; k < j; ++k)
                s -= MUL(a[(long)i * n + k], CONJ(a[(long)j * n + k]));
            a[(long)i * n + j] = DIV(s, djj);
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
}
