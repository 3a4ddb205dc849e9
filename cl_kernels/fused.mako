## Fused elementwise kernels: a chain of the elementwise table's ops over contiguous tensors of one
## float dtype and one size (clgrad/kernels/fused.py): from a compiled step's recording, or from the
## tiny launches an eager device holds back (Device.defer). The prelude and the table's helpers come
## from elementwise.mako itself (rendered with no entries); each op of the chain evaluates the
## table's expression for its dtype, with x, y, z and p0.. bound to earlier results, loaded
## elements, the kernel's scalar arguments s0.. or recorded numbers. Each work-item carries its
## elements through the whole chain; only the buffers listed as stores are written. A repeated
## buffer (a 0-d tensor operand) gives every element its element 0.
##
## A vector chain (every op has vector code) is laid out as the contiguous kernels are: VEC (VEC8)
## elements per work-item in vector form, the tail in scalar form, so that every element is
## computed by the same form of the same expression as the unfused kernels compute it (the forms
## may round a transcendental function's last bit differently). Otherwise one element per item.
<%namespace name="c" file="common.mako"/>
<%namespace name="ew" file="elementwise.mako"/>
<%include file="elementwise.mako"/>
<%
CT = dt.ct
W = c.attr.width(dt)
VT = f"CAT({CT}, {W})"
%>
## Contraction is off (elementwise.mako says why): no multiply of one op and add of the next
## become one fma, and each op's expression rounds as its own kernel's does.
## one pass of the chain: T is the type of a value (vector or scalar); load(b) and store(b, v)
## read and write buffer b at this pass's index
<%def name="chain_body(chain, T, load, store, indent)">
% for b, var in chain.loads:
${indent}const ${T} ${var} = ${load(b)};
% endfor
% for var, expr, names, values in chain.ops:
${indent}${T} ${var};
${indent}{
% for nm, v in zip(names, values):
% if nm.startswith("p"):
${indent}    const ${CT} ${nm} = ${v};
% else:
${indent}    const ${T} ${nm} = (${T})(${v});
% endif
% endfor
${indent}    ${var} = ${expr};
${indent}}
% endfor
% for b, var in chain.stores:
${indent}${store(b, var)};
% endfor
</%def>
% for chain in chains:
__kernel void ${chain.name}(
% for b in range(chain.nbufs):
    __global ${dt.cl} *b${b}, long o${b},
% endfor
## the numbers, sixteen to an argument: setting an argument costs the host more than a number
% for v in range(-(-chain.nscalars // 16)):
    ${CT}16 sv${v},
% endfor
    long n)
{
    long i = get_global_id(0);
% for s in range(chain.nscalars):
    const ${CT} s${s} = sv${s // 16}.s${"%x" % (s % 16)};
% endfor
% if chain.vector:
    if ((i + 1) * ${W} <= n) {
${ew.begin_ctx("v")}
${chain_body(chain, VT, lambda b: f"({VT})(b{b}[o{b}])" if b in chain.repeated else
                                 c.vload(dt, f"b{b} + o{b}", "i", W),
             lambda b, v: c.vstore(dt, f"b{b} + o{b}", "i", v, W), "        ")}
${ew.end_ctx()}
    } else {
${ew.begin_ctx("s")}
        for (long j = i * ${W}; j < n; ++j) {
${chain_body(chain, CT, lambda b: f"b{b}[o{b}" + ("]" if b in chain.repeated else " + j]"),
             lambda b, v: f"b{b}[o{b} + j] = {v}", "            ")}
        }
${ew.end_ctx()}
    }
% else:
${ew.begin_ctx("s")}
    if (i < n) {
${chain_body(chain, CT, lambda b: f"b{b}[o{b}" + ("]" if b in chain.repeated else " + i]"),
             lambda b, v: f"b{b}[o{b} + i] = {v}", "        ")}
    }
${ew.end_ctx()}
% endif
}
% endfor
