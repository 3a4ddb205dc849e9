## Fused elementwise kernels: a chain of the elementwise table's ops over contiguous tensors of one
## float dtype and one size, found in a compiled step's recording (clgrad/kernels/fused.py). The
## prelude and the table's helpers come from elementwise.mako itself (rendered with no entries);
## each op of the chain evaluates the table's expression for its dtype in the scalar context, with
## x, y, z and p0.. bound to earlier results, loaded elements or the recorded numbers. Each
## work-item computes one element through the whole chain; only buffers read after the chain
## are stored.
<%namespace name="c" file="common.mako"/>
<%include file="elementwise.mako"/>
<% CT = dt.ct %>
#define SEL(cnd, a, b) ((cnd) ? (a) : (b))
#define CV(v) ((${CT})(v))
#define FALSE_ ((uchar)0)
#define FLOORDIV floordiv_s
#define REMAINDER remainder_s
#define GELU_ERFC gelu_erfc_s
% for chain in chains:
__kernel void ${chain.name}(
% for b in range(chain.nbufs):
    __global ${dt.cl} *b${b}, long o${b},
% endfor
    long n)
{
    long i = get_global_id(0);
    if (i >= n)
        return;
% for b, var in chain.loads:
    const ${CT} ${var} = b${b}[o${b} + i];
% endfor
% for var, expr, names, values in chain.ops:
    ${CT} ${var};
    {
% for nm, v in zip(names, values):
        const ${CT} ${nm} = ${v};
% endfor
        ${var} = ${expr};
    }
% endfor
% for b, var in chain.stores:
    b${b}[o${b} + i] = ${var};
% endfor
}
% endfor
#undef SEL
#undef CV
#undef FALSE_
#undef FLOORDIV
#undef REMAINDER
#undef GELU_ERFC
