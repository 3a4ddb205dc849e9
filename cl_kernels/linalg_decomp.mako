## Orthogonal decompositions of small and medium matrices, batched, for float dtype `dt`
## (float32, float64). One work-group per matrix, its size L a power of two (the host makes it
## one); every matrix is contiguous row-major inside a contiguous batch; barriers order the
## steps that pass data between work-items.
##
## qr: Householder QR, in place. For each column j < min(m, n): the norm of the column below
## the diagonal (a tree over local memory), the reflector H = I - tau v v^T computed by one
## work-item as LAPACK's larfg does (beta = -sign(alpha) * norm, so R's diagonal has LAPACK's
## signs; tau = 0, H = I, where the column below the diagonal is zero), v stored below the
## diagonal, then H applied to the trailing columns, each work-item owning every L-th column.
## With want_q, Q's first mq columns (mq = min(m, n) or m) are formed by applying the
## reflectors in reverse order to the identity, each work-item owning every L-th column of Q.
##
## eigh_jacobi: the cyclic Jacobi eigenvalue algorithm on a symmetric matrix, in place.
## Sweeps over all pairs p < q in row order; each rotation (Rutishauser's formulas, computed by
## one work-item) zeroes a[p, q] and is applied to rows/columns p and q (work-item k owns
## a[k, p], a[p, k], a[k, q], a[q, k]) and to V's columns p and q. A sweep starts only while
## the off-diagonal Frobenius norm exceeds eps * ||A||_F (||A||_F does not change under
## rotations), at most max_sweeps. Then each eigenvector's largest component (the first on
## ties) is made positive. The eigenvalues are a's diagonal, unsorted.
##
## svd_jacobi: one-sided Jacobi (Hestenes) on an m x n matrix with m >= n, in place: for each
## pair of columns p < q, alpha = |u_p|^2, beta = |u_q|^2, gamma = u_p . u_q (trees over local
## memory); where |gamma| > eps * sqrt(alpha * beta) a rotation makes the two columns
## orthogonal, in U and in V (started as I). Each work-item owns the same rows throughout, so
## only the sums pass data between work-items. Sweeps until one makes no rotation, at most
## max_sweeps. Then U's columns are U_final * S, V's the right singular vectors, unsorted.
##
## Complex dtypes (complex64, complex128) render eigh_jacobi only, for Hermitian matrices: each
## step first turns a[p, q] = r e real by the phase conj(e) on column q (and e on row q, and on V's
## column q), then rotates as the real kernel does; each eigenvector's largest component (by
## modulus) is made real and positive.
<%namespace name="c" file="common.mako"/>
${c.prelude([dt])}
<% T = dt.ct if dt.kind != "c" else dt.rt %>
#define GROUP_MAX 256
%if T == "double":
#define EPS 2.220446049250313e-16
#define HUGE_THETA 1e150
%else:
#define EPS 1.1920929e-07f
#define HUGE_THETA 1e18f
%endif

/* The sum of v over the work-group (L a power of two), returned to every work-item. Called by
   the whole group; buf is reused only after everyone has read the previous sum. The barriers
   fence global memory too: callers sum global entries that one work-item writes next. */
${T} group_sum(__local ${T} *buf, ${T} v, const int lid, const int L)
{
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int s = L / 2; s > 0; s >>= 1) {
        if (lid < s)
            buf[lid] += buf[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return buf[0];
}

/* tan of the Jacobi rotation angle that zeroes the off-diagonal entry, from
   theta = (a_qq - a_pp) / (2 a_pq): the smaller root of t^2 + 2 theta t - 1 = 0. */
${T} jacobi_t(const ${T} theta)
{
    if (fabs(theta) > HUGE_THETA)                /* theta^2 would overflow */
        return (${T})0.5 / theta;
    return copysign((${T})1, theta) / (fabs(theta) + sqrt(theta * theta + 1));
}

% if dt.kind == "c":
<% CT = dt.ct %>
${c.complex_helpers(CT, T)}
inline ${T} abs2(const ${CT} z) { return z.x * z.x + z.y * z.y; }

__kernel void eigh_jacobi(__global ${CT} *A, __global ${CT} *V, __global int *sweeps,
                          const int n, const int max_sweeps)
{
    const long b = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
    const long nn = (long)n * n;
    __global ${CT} *a = A + b * nn;
    __global ${CT} *v = V + b * nn;
    __local ${T} buf[GROUP_MAX];
    __local ${T} sh_c, sh_s;
    __local ${CT} sh_e;
    ${T} part = 0;
    for (long e = lid; e < nn; e += L) {
        v[e] = (${CT})((${T})(e / n == e % n), (${T})0);
        part += abs2(a[e]);
    }
    const ${T} tol2 = EPS * EPS * group_sum(buf, part, lid, L);
    int sweep = 0;
    for (; sweep < max_sweeps; ++sweep) {
        part = 0;
        for (long e = lid; e < nn; e += L)
            if (e / n != e % n)
                part += abs2(a[e]);
        const ${T} off2 = group_sum(buf, part, lid, L);
        if (!(off2 > tol2))                              /* the same for the whole group */
            break;
        for (int p = 0; p < n - 1; ++p) {
            for (int q = p + 1; q < n; ++q) {
                if (lid == 0) {
                    const ${CT} apq = a[(long)p * n + q];
                    const ${T} r = hypot(apq.x, apq.y);
                    ${T} cs = 1, sn = 0;
                    ${CT} e = (${CT})((${T})1, (${T})0);
                    if (r != 0) {
                        e = (${CT})(apq.x / r, apq.y / r);
                        const ${T} app = a[(long)p * n + p].x, aqq = a[(long)q * n + q].x;
                        const ${T} t = jacobi_t((aqq - app) / (2 * r));
                        cs = 1 / sqrt(t * t + 1);
                        sn = t * cs;
                        a[(long)p * n + p] = (${CT})(app - t * r, (${T})0);
                        a[(long)q * n + q] = (${CT})(aqq + t * r, (${T})0);
                        a[(long)p * n + q] = (${CT})((${T})0, (${T})0);
                        a[(long)q * n + p] = (${CT})((${T})0, (${T})0);
                    }
                    sh_c = cs;
                    sh_s = sn;
                    sh_e = e;
                }
                barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
                const ${T} cs = sh_c, sn = sh_s;
                const ${CT} ec = cconj(sh_e);
                if (sn != 0) {
                    for (int r = lid; r < n; r += L) {
                        if (r != p && r != q) {
                            const ${CT} arp = a[(long)r * n + p];
                            const ${CT} arq = cmul(a[(long)r * n + q], ec);
                            const ${CT} np = cs * arp - sn * arq, nq = sn * arp + cs * arq;
                            a[(long)r * n + p] = np;
                            a[(long)p * n + r] = cconj(np);
                            a[(long)r * n + q] = nq;
                            a[(long)q * n + r] = cconj(nq);
                        }
                        const ${CT} vrp = v[(long)r * n + p], vrq = cmul(v[(long)r * n + q], ec);
                        v[(long)r * n + p] = cs * vrp - sn * vrq;
                        v[(long)r * n + q] = sn * vrp + cs * vrq;
                    }
                }
                /* the rotated entries before the next pivot reads them; sh_c before it changes */
                barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            }
        }
    }
    if (lid == 0)
        sweeps[b] = sweep;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int col = lid; col < n; col += L) {  /* the largest component real and positive */
        ${T} best = -1;
        ${CT} val = (${CT})((${T})1, (${T})0);
        for (int r = 0; r < n; ++r) {
            const ${CT} x = v[(long)r * n + col];
            if (abs2(x) > best) { best = abs2(x); val = x; }
        }
        const ${T} m = hypot(val.x, val.y);
        if (m > 0) {
            const ${CT} ph = (${CT})(val.x / m, -val.y / m);
            for (int r = 0; r < n; ++r)
                v[(long)r * n + col] = cmul(v[(long)r * n + col], ph);
        }
    }
}
% else:

__kernel void qr(__global ${T} *A, __global ${T} *tau, __global ${T} *Q, const int m,
                 const int n, const int mq, const int want_q)
{
    const long b = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
    const int k = min(m, n);
    __global ${T} *a = A + b * (long)m * n;
    __global ${T} *tv = tau + b * (long)k;
    __local ${T} buf[GROUP_MAX];
    __local ${T} sh_tau, sh_scale;
    for (int j = 0; j < k; ++j) {
        ${T} part = 0;
        for (int i = j + 1 + lid; i < m; i += L)
            part += a[(long)i * n + j] * a[(long)i * n + j];
        const ${T} xx = group_sum(buf, part, lid, L);
        if (lid == 0) {
            const ${T} alpha = a[(long)j * n + j];
            ${T} t = 0, scale = 0;
            if (xx > 0) {
                const ${T} beta = -copysign(sqrt(alpha * alpha + xx), alpha);
                t = (beta - alpha) / beta;
                scale = 1 / (alpha - beta);
                a[(long)j * n + j] = beta;
            }
            tv[j] = t;
            sh_tau = t;
            sh_scale = scale;
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        const ${T} t = sh_tau, scale = sh_scale;
        if (t != 0)
            for (int i = j + 1 + lid; i < m; i += L)
                a[(long)i * n + j] *= scale;              /* v, below the diagonal (v_j = 1) */
        barrier(CLK_GLOBAL_MEM_FENCE);
        if (t != 0) {
            for (int col = j + 1 + lid; col < n; col += L) {
                ${T} w = a[(long)j * n + col];
                for (int i = j + 1; i < m; ++i)
                    w += a[(long)i * n + j] * a[(long)i * n + col];
                w *= t;
                a[(long)j * n + col] -= w;
                for (int i = j + 1; i < m; ++i)
                    a[(long)i * n + col] -= w * a[(long)i * n + j];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    if (!want_q)
        return;
    __global ${T} *q = Q + b * (long)m * mq;
    for (int col = lid; col < mq; col += L) {
        for (int i = 0; i < m; ++i)
            q[(long)i * mq + col] = i == col;
        for (int j = k - 1; j >= 0; --j) {               /* Q = H_0 H_1 ... H_{k-1} I */
            const ${T} t = tv[j];
            if (t == 0)
                continue;
            ${T} w = q[(long)j * mq + col];
            for (int i = j + 1; i < m; ++i)
                w += a[(long)i * n + j] * q[(long)i * mq + col];
            w *= t;
            q[(long)j * mq + col] -= w;
            for (int i = j + 1; i < m; ++i)
                q[(long)i * mq + col] -= w * a[(long)i * n + j];
        }
    }
}

__kernel void eigh_jacobi(__global ${T} *A, __global ${T} *V, __global int *sweeps,
                          const int n, const int max_sweeps)
{
    const long b = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
    const long nn = (long)n * n;
    __global ${T} *a = A + b * nn;
    __global ${T} *v = V + b * nn;
    __local ${T} buf[GROUP_MAX];
    __local ${T} sh_c, sh_s;
    ${T} part = 0;
    for (long e = lid; e < nn; e += L) {
        v[e] = e / n == e % n;
        part += a[e] * a[e];
    }
    const ${T} tol2 = EPS * EPS * group_sum(buf, part, lid, L);
    int sweep = 0;
    for (; sweep < max_sweeps; ++sweep) {
        part = 0;
        for (long e = lid; e < nn; e += L)
            if (e / n != e % n)
                part += a[e] * a[e];
        const ${T} off2 = group_sum(buf, part, lid, L);
        if (!(off2 > tol2))                              /* the same for the whole group */
            break;
        for (int p = 0; p < n - 1; ++p) {
            for (int q = p + 1; q < n; ++q) {
                if (lid == 0) {
                    const ${T} apq = a[(long)p * n + q];
                    ${T} cs = 1, sn = 0;
                    if (apq != 0) {
                        const ${T} app = a[(long)p * n + p], aqq = a[(long)q * n + q];
                        const ${T} t = jacobi_t((aqq - app) / (2 * apq));
                        cs = 1 / sqrt(t * t + 1);
                        sn = t * cs;
                        a[(long)p * n + p] = app - t * apq;
                        a[(long)q * n + q] = aqq + t * apq;
                        a[(long)p * n + q] = 0;
                        a[(long)q * n + p] = 0;
                    }
                    sh_c = cs;
                    sh_s = sn;
                }
                barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
                const ${T} cs = sh_c, sn = sh_s;
                if (sn != 0) {
                    for (int r = lid; r < n; r += L) {
                        if (r != p && r != q) {
                            const ${T} arp = a[(long)r * n + p], arq = a[(long)r * n + q];
                            const ${T} np = cs * arp - sn * arq, nq = sn * arp + cs * arq;
                            a[(long)r * n + p] = np;
                            a[(long)p * n + r] = np;
                            a[(long)r * n + q] = nq;
                            a[(long)q * n + r] = nq;
                        }
                        const ${T} vrp = v[(long)r * n + p], vrq = v[(long)r * n + q];
                        v[(long)r * n + p] = cs * vrp - sn * vrq;
                        v[(long)r * n + q] = sn * vrp + cs * vrq;
                    }
                }
                /* the rotated entries before the next pivot reads them; sh_c before it changes */
                barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
            }
        }
    }
    if (lid == 0)
        sweeps[b] = sweep;
    barrier(CLK_GLOBAL_MEM_FENCE);
    for (int col = lid; col < n; col += L) {             /* the largest component positive */
        ${T} best = -1, val = 0;
        for (int r = 0; r < n; ++r) {
            const ${T} x = v[(long)r * n + col];
            if (fabs(x) > best) { best = fabs(x); val = x; }
        }
        if (val < 0)
            for (int r = 0; r < n; ++r)
                v[(long)r * n + col] = -v[(long)r * n + col];
    }
}

__kernel void svd_jacobi(__global ${T} *U, __global ${T} *V, __global int *sweeps,
                         const int m, const int n, const int max_sweeps)
{
    const long b = get_group_id(0);
    const int lid = get_local_id(0), L = get_local_size(0);
    __global ${T} *u = U + b * (long)m * n;
    __global ${T} *v = V + b * (long)n * n;
    __local ${T} bufa[GROUP_MAX], bufb[GROUP_MAX], bufg[GROUP_MAX];
    for (int r = lid; r < n; r += L)
        for (int col = 0; col < n; ++col)
            v[(long)r * n + col] = r == col;
    int sweep = 0, rotated = 1;
    for (; sweep < max_sweeps && rotated; ++sweep) {
        rotated = 0;                                     /* the same in every work-item */
        for (int p = 0; p < n - 1; ++p) {
            for (int q = p + 1; q < n; ++q) {
                ${T} pa = 0, pb = 0, pg = 0;
                for (int r = lid; r < m; r += L) {
                    const ${T} x = u[(long)r * n + p], y = u[(long)r * n + q];
                    pa += x * x;
                    pb += y * y;
                    pg += x * y;
                }
                const ${T} alpha = group_sum(bufa, pa, lid, L);
                const ${T} beta = group_sum(bufb, pb, lid, L);
                const ${T} gamma = group_sum(bufg, pg, lid, L);
                if (gamma != 0 && fabs(gamma) > EPS * sqrt(alpha * beta)) {
                    rotated = 1;
                    const ${T} t = jacobi_t((beta - alpha) / (2 * gamma));
                    const ${T} cs = 1 / sqrt(t * t + 1), sn = t * cs;
                    for (int r = lid; r < m; r += L) {
                        const ${T} x = u[(long)r * n + p], y = u[(long)r * n + q];
                        u[(long)r * n + p] = cs * x - sn * y;
                        u[(long)r * n + q] = sn * x + cs * y;
                    }
                    for (int r = lid; r < n; r += L) {
                        const ${T} x = v[(long)r * n + p], y = v[(long)r * n + q];
                        v[(long)r * n + p] = cs * x - sn * y;
                        v[(long)r * n + q] = sn * x + cs * y;
                    }
                }
            }
        }
    }
    if (lid == 0)
        sweeps[b] = sweep;
}
% endif
