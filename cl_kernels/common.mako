## Shared pieces of every kernel family: the prelude (vector-width macros, 16-bit conversions) and
## loads/stores per dtype. A dtype `d` has fields cl (storage type), ct (compute type), kind, short.
## The elements a work-item handles in contiguous kernels come from the build options: VEC for
## compute types of up to 4 bytes, VEC8 for 8-byte ones (so that no vector is wider than the
## device's SIMD registers; PoCL mishandles 512-bit vectors on AVX2 machines). `w` below names
## the one a kernel uses; width() picks it.
<%!
def width(*dts):
    return "VEC8" if any(d.ct in ("double", "long") for d in dts) else "VEC"
%>

<%def name="prelude(dts)">
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
% if any(d.cl == "double" for d in dts):
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
/* bfloat16 is the upper half of a float32; rounding to nearest even, NaN kept quiet. */
inline float bf2f(ushort b) { return as_float(((uint)b) << 16); }
inline ushort f2bf(float f) {
    uint u = as_uint(f);
    if (isnan(f)) return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
% for w in ("VEC", "VEC8"):
inline CAT(float, ${w}) bf2fv_${w}(CAT(ushort, ${w}) b) {
    return CAT(as_float, ${w})(CAT(convert_uint, ${w})(b) << 16);
}
inline CAT(ushort, ${w}) f2bfv_${w}(CAT(float, ${w}) f) {
    CAT(uint, ${w}) u = CAT(as_uint, ${w})(f);
    CAT(uint, ${w}) r = (u + (CAT(uint, ${w}))(0x7FFFu) + ((u >> 16) & (CAT(uint, ${w}))(1u))) >> 16;
    r = select(r, (u >> 16) | (CAT(uint, ${w}))(0x40u), CAT(as_uint, ${w})(isnan(f)));
    return CAT(convert_ushort, ${w})(r);
}
% endfor
</%def>

## the C type of a pointer to storage of dtype d
<%def name="ptr(d)">__global ${d.cl} *</%def>
<%def name="cptr(d)">__global const ${d.cl} *</%def>


## scalar load of element `i` (an expression) of pointer `p`, converted to the compute type
<%def name="load(d, p, i)">\
% if d.cl == "half":
vload_half(${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
bf2f(${p}[${i}])\
% else:
${p}[${i}]\
% endif
</%def>

## vector load of vector-element `i` of pointer `p` (that is elements i*VEC .. i*VEC+VEC-1)
<%def name="vload(d, p, i, w)">\
% if d.cl == "half":
CAT(vload_half, ${w})(${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
bf2fv_${w}(CAT(vload, ${w})(${i}, ${p}))\
% else:
CAT(vload, ${w})(${i}, ${p})\
% endif
</%def>

## scalar store of compute-type value v
<%def name="store(d, p, i, v)">\
% if d.cl == "half":
vstore_half(${v}, ${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
${p}[${i}] = f2bf(${v})\
% else:
${p}[${i}] = ${v}\
% endif
</%def>

<%def name="vstore(d, p, i, v, w)">\
% if d.cl == "half":
CAT(vstore_half, ${w})(${v}, ${i}, ${p})\
% elif d.cl == "ushort" and d.ct == "float":
CAT(vstore, ${w})(f2bfv_${w}(${v}), ${i}, ${p})\
% else:
CAT(vstore, ${w})(${v}, ${i}, ${p})\
% endif
</%def>

## strided kernels: decompose the flat index i into nd coordinates of shape shp (a long8 argument)
<%def name="coords()">\
long c_[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    { long r_ = i; long sh_[8] = {shp.s0, shp.s1, shp.s2, shp.s3, shp.s4, shp.s5, shp.s6, shp.s7};
      for (int d_ = nd - 1; d_ >= 0; --d_) { c_[d_] = r_ % sh_[d_]; r_ /= sh_[d_]; } }
</%def>

## element offset of the current element in an operand with strides `st` (a long8) from `base`
<%def name="offset(base, st)">\
(${base} + c_[0] * ${st}.s0 + c_[1] * ${st}.s1 + c_[2] * ${st}.s2 + c_[3] * ${st}.s3 + c_[4] * ${st}.s4 + c_[5] * ${st}.s5 + c_[6] * ${st}.s6 + c_[7] * ${st}.s7)\
</%def>
