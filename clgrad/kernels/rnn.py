"""The rnn family (cl_kernels/rnn.mako): the pointwise part of one recurrent step (LSTM, GRU,
Elman RNN), forward and backward, in one kernel each. The step's GEMM is the caller's (the
layers in clgrad/ops/rnn_cell.py); these kernels read and write [B, *] slices of the layer's
[T, B, *] buffers, so every tensor argument comes with an extra element offset (the step's
slice) added to its own. Each kernel has a `_v` form (a vector of hidden units per work-item,
where H is a multiple of the vector width) and a scalar `_s` form. Raw launches: no autograd.

>>> import clgrad
>>> B, H = 1, 1
>>> gates, c_prev = clgrad.zeros(B, 4 * H), clgrad.ones(B, H)
>>> h, c, act = clgrad.empty(B, H), clgrad.empty(B, H), clgrad.empty(B, 4 * H)
>>> lstm_fwd_raw(B, H, gates, 0, c_prev, 0, h, 0, c, 0, act, 0)
>>> round(h.item(), 4), c.item()
(0.2311, 0.5)
"""
from .. import dtypes
from ..runtime.family import KernelFamily
from ..runtime.kernels import vec_width
from ..tensor import empty_tensor
from . import gemm as _gemm

RNN = KernelFamily("rnn", lambda dt: dict(dt=dt), dtypes.FLOATS)


def _arg(t, off=0):
    """A tensor argument at an extra element offset (a step's slice of a layer buffer)."""
    return t._storage.buf, t._offset + off


def _opt(g, off, other):
    """An optional gradient argument of the backward kernels: (buffer, offset, present flag); an
    absent one passes the buffer of `other`, never read (some drivers refuse a NULL buffer)."""
    return [*_arg(g, off), 1] if g is not None else [other._storage.buf, 0, 0]


def _launch(name, dev, dt, B, H, *args):
    """The `_v` kernel (a vector of hidden units per work-item) where H allows it."""
    w = vec_width(dev, dt)
    vec = H % w == 0
    if B * H:
        RNN.launch(dev, dt, name + ("_v" if vec else "_s"), B * H // w if vec else B * H, *args,
                   B, H)


def lstm_fwd_raw(B, H, gates, go, c_prev, cpo, h, ho, c, co, act, ao):
    """The LSTM cell on [B, 4H] / [B, H] slices at the given extra element offsets: h, c and the
    activated gates (act) from the gate pre-activations and c_prev."""
    _launch("lstm_fwd", gates._storage.device, gates._dtype, B, H, *_arg(gates, go),
            *_arg(c_prev, cpo), *_arg(h, ho), *_arg(c, co), *_arg(act, ao))


def lstm_bwd_raw(B, H, dh, dh2, dc, act, ao, c_prev, cpo, c, co, dgates, dgo, dcp):
    """The LSTM cell's backward: dgates and dc_prev (dcp). dh, dh2, dc: (tensor, extra offset)
    or None."""
    opt = []
    for g in (dh, dh2, dc):
        opt += _opt(g[0], g[1], act) if g is not None else _opt(None, 0, act)
    _launch("lstm_bwd", act._storage.device, act._dtype, B, H, *opt, *_arg(act, ao),
            *_arg(c_prev, cpo), *_arg(c, co), *_arg(dgates, dgo), *_arg(dcp))


def gru_fwd_raw(B, H, proj, po, gh, h_prev, hpo, h, ho, act, ao):
    """The GRU cell: h from the input projection proj [B, 3H], gh = h_prev W_hh^T + b_hh [B, 3H]
    and h_prev; act [B, 4H] keeps r, z, n and W_hn h + b_hn for backward."""
    _launch("gru_fwd", proj._storage.device, proj._dtype, B, H, *_arg(proj, po), *_arg(gh),
            *_arg(h_prev, hpo), *_arg(h, ho), *_arg(act, ao))


def gru_bwd_raw(B, H, dh, dout, doo, act, ao, h_prev, hpo, dx, dxo, dgh, dgho, dhp):
    """The GRU cell's backward: dx (the projection's gradient), dgh (that of h_prev W_hh^T +
    b_hh) and dhp (z * dh); dh (offset 0) and dout (at doo) may be None."""
    _launch("gru_bwd", act._storage.device, act._dtype, B, H, *_opt(dh, 0, act),
            *_opt(dout, doo, act), *_arg(act, ao), *_arg(h_prev, hpo), *_arg(dx, dxo),
            *_arg(dgh, dgho), *_arg(dhp))


def rnn_fwd_raw(B, H, pre, h, ho, relu):
    """The Elman cell: h = tanh(pre) (or relu)."""
    _launch("rnn_fwd", pre._storage.device, pre._dtype, B, H, *_arg(pre), *_arg(h, ho), relu)


def rnn_bwd_raw(B, H, dh, dout, doo, h, ho, dpre, dpo, relu):
    """The Elman cell's backward: dpre from h and the gradients dh (offset 0) and dout (at doo),
    either of which may be None."""
    _launch("rnn_bwd", h._storage.device, h._dtype, B, H, *_opt(dh, 0, h), *_opt(dout, doo, h),
            *_arg(h, ho), *_arg(dpre, dpo), relu)


# ---- recurrent steps with the cell in the GEMM's epilogue (cl_kernels/gemm.mako) -------------
class _FusedSteps:
    """The fused recurrent steps of one layer kind (GATES gates; a float32 or float64 layer of H
    hidden units on a device whose GEMM is the packed kind): each forward step is one launch
    (h W_hh^T straight into the cell), and so is each backward step but the first and the last
    (dgates_t W_hh straight into the cell's backward of step t-1), instead of two. A work-item
    keeps `rows` rows by the GATES gates of VW hidden units. `for_layer` gives a layer's steps,
    or None where they do not apply."""

    GATES = None
    MACRO = None

    def __init__(self, dev, dt, cfg):
        self.dev, self.dt = dev, dt
        self.vw = _gemm._vw(cfg, dt)
        self.mr = self.rows(cfg, self.GATES)
        self.nr = self.GATES * self.vw
        self.opts = (f"-DMR={self.mr} -DNV={self.GATES} -DVW={self.vw} -DNR={self.nr} "
                     f"-D{self.MACRO}")
        _gemm.GEMM.program(dt, self.opts, f"{self.MACRO.split('_')[0].lower()}{self.mr}x{self.vw}")

    @staticmethod
    def rows(cfg, gates):
        """The rows of the batch a work-item keeps: MR * NV // gates (the tuned GEMM's count of
        accumulators, cfg), fewer where rows x gates accumulators, the gates' vectors of B and
        one of A would come to more than one vector above what the GEMM holds (MR x NV + NV +
        1). PoCL's AVX2 code has 16 vector registers: with 3 rows an LSTM step (12 + 4 + 1 = 17
        vectors) took 1.3x the time of 2 rows (tools/bench_compile.py's LSTM step, compiled:
        12.53 -> 9.66 ms, best of 12 interleaved), while a GRU step's 4 rows (12 + 3 + 1 = 16)
        ran as fast as 3.

        >>> _FusedSteps.rows({"MR": 6, "NV": 2}, 4), _FusedSteps.rows({"MR": 6, "NV": 2}, 3)
        (2, 4)
        """
        accumulators = cfg["MR"] * cfg["NV"]
        fit = (accumulators + cfg["NV"] + 1 - gates) // gates
        return max(1, min(accumulators // gates, fit))

    @classmethod
    def for_layer(cls, like, H):
        """The steps for a layer whose tensors are like `like`, or None where the fused kernels
        do not apply (a GEMM that is not packed, half types, H not a multiple of the vector)."""
        dev, dt = like._storage.device, like._dtype
        if dt not in (dtypes.float32, dtypes.float64):
            return None
        cfg = _gemm.config(dev)
        if cfg["kind"] != "packed" or H % _gemm._vw(cfg, dt) or H == 0:
            return None
        key = (cls, dev, dt, tuple(sorted(cfg.items())))
        steps = _STEPS.get(key)
        if steps is None:
            steps = _STEPS[key] = cls(dev, dt, cfg)
        return steps

    def _geometry(self, M, N):
        mb, nb = -(-M // self.mr), -(-N // self.nr)
        ly = min(mb, 8, self.dev.max_work_group_size)
        return (nb, -(-mb // ly) * ly, 1), (1, ly, 1)

    def _pack(self, name, nb, K, N, *args):
        pb = empty_tensor((nb * K * self.nr,), self.dt, self.dev)
        ls = min(64, self.dev.max_work_group_size)
        geometry = (_gemm.pack_along_k_geometry(self.dev, K, nb, 1) if name == "pack_b" else
                    ((-(-K // ls) * ls, nb, 1), (ls, 1, 1)))
        _gemm.GEMM.launch(self.dev, self.dt, name, geometry, pb._storage.buf, *args, K, N,
                          options=self.opts)
        return pb

    def pack_forward(self, w_hh):
        """W_hh^T [H, GATES * H] in panels of the gates of VW units (what forward reads)."""
        H = w_hh._shape[1]
        return self._pack("pack_b_gates", H // self.vw, H, H, w_hh._storage.buf, w_hh._offset,
                          w_hh._strides[1], w_hh._strides[0])

    def pack_backward(self, w_hh):
        """W_hh [GATES * H, H] in panels of NR columns (what backward reads)."""
        G, H = w_hh._shape
        return self._pack("pack_b", -(-H // self.nr), G, H, 0, w_hh._storage.buf, w_hh._offset, 0,
                          w_hh._strides[0], w_hh._strides[1])

    def _launch_steps(self, name, *args):
        """A multi-step kernel: one work-group, whose work-items share each step's blocks; of
        one size whatever the shape (PoCL compiles a kernel anew for each local size it
        meets)."""
        ls = min(64, self.dev.max_work_group_size)
        _gemm.GEMM.launch(self.dev, self.dt, name, ((ls, 1, 1), (ls, 1, 1)), *args,
                          options=self.opts)

    def _launch(self, name, B, N, *args):
        _gemm.GEMM.launch(self.dev, self.dt, name, self._geometry(B, N), *args,
                          options=self.opts)


class LSTMSteps(_FusedSteps):
    """An LSTM layer's fused steps (gates i, f, g, o).

    >>> import clgrad
    >>> steps = LSTMSteps.for_layer(clgrad.zeros(1), 16)
    >>> steps is None or steps.vw in (2, 4, 8, 16)
    True
    """

    GATES, MACRO = 4, "LSTM_STEPS"

    def forward(self, B, H, h, ho, pw, proj, po, c_prev, cpo, out, oo, cs, cso, act, ao):
        """Step t: out[oo:] = h_t, cs[cso:] = c_t, act[ao:] = the gates, from h_{t-1} (h at
        extra offset ho), c_{t-1} and proj_t (proj at po); pw from pack_forward."""
        self._launch("lstm_step_fwd", B, 4 * H, *_arg(out, oo), *_arg(h, ho), H,
                     pw._storage.buf, *_arg(proj, po), *_arg(c_prev, cpo), *_arg(cs, cso),
                     *_arg(act, ao), B, 4 * H, H)

    def forward_steps(self, S, B, H, h, ho, pw, proj, po, c_prev, cpo, out, oo, cs, cso, act,
                      ao, dir=1):
        """S steps of forward from h (at ho) and c_prev (at cpo) in one launch of one work-group,
        a barrier between steps (for PoCL's CPU devices: ops/rnn_cell.py _one_launch): each step
        as `forward`, proj / out / cs / act at their offsets for the first step, the next steps'
        rows after it (dir 1) or before it (-1, a reverse layer)."""
        self._launch_steps("lstm_steps_fwd", *_arg(out, oo), *_arg(h, ho), pw._storage.buf,
                           *_arg(proj, po), *_arg(c_prev, cpo), *_arg(cs, cso), *_arg(act, ao),
                           B, 4 * H, H, S, dir)

    def backward(self, B, H, dg, dgo_t, pw, dout, douto, dc, act, ao, c_prev, cpo, cs, cso,
                 dgo, dcp):
        """At step t: dh_{t-1} = dgates_t W_hh (dg at extra offset dgo_t), then the cell's
        backward of step t-1 with dout (None or the outputs' gradient, at douto), dc (its dc,
        contiguous [B, H]), act / c_prev / cs at their offsets; writes dg at dgo (dgates_{t-1})
        and dcp ([B, H], dc_{t-2}). pw from pack_backward."""
        self._launch("lstm_step_bwd", B, H, *_arg(dg, dgo_t), 4 * H, pw._storage.buf,
                     *_opt(dout, douto, act), *_arg(dc), *_arg(act, ao), *_arg(c_prev, cpo),
                     *_arg(cs, cso), *_arg(dg, dgo), *_arg(dcp), B, H, 4 * H)

    def backward_steps(self, S, B, H, dg, dgo, pw, dout, douto, dc, act, ao, c0, c0o, s_c0, cs,
                       cso, dcp, dir=1):
        """S steps of backward in one launch, each as `backward`, against the forward's order:
        the first at dg's offset dgo (the dgates of the step run after it a step's rows on in
        the forward's direction dir), act / cs / dout at the first step's offsets, the next
        steps' rows back from them; c0 (at c0o) is c_prev at step s_c0; dc (a [B, H]) is the
        first step's dc, dcp ([B, H]) gets the last's dc_prev."""
        self._launch_steps("lstm_steps_bwd", *_arg(dg, dgo), pw._storage.buf,
                           *_opt(dout, douto, act), *_arg(dc), *_arg(act, ao), *_arg(c0, c0o),
                           s_c0, *_arg(cs, cso), *_arg(dcp), B, H, 4 * H, S, dir)


class GRUSteps(_FusedSteps):
    """A GRU layer's fused steps (gates r, z, n; b_hh added to the product, as torch's n =
    tanh(x_n + r * (W_hn h + b_hn)) needs).

    >>> import clgrad
    >>> steps = GRUSteps.for_layer(clgrad.zeros(1), 16)
    >>> steps is None or steps.nr == 3 * steps.vw
    True
    """

    GATES, MACRO = 3, "GRU_STEPS"

    def forward(self, B, H, h, ho, pw, b_hh, proj, po, out, oo, act, ao):
        """Step t: out[oo:] = h_t and act[ao:] = r, z, n, W_hn h + b_hn, from h_{t-1} (h at
        extra offset ho), b_hh (or None) and proj_t (proj at po); pw from pack_forward."""
        self._launch("gru_step_fwd", B, 3 * H, *_arg(out, oo), *_arg(h, ho), H,
                     pw._storage.buf, *_opt(b_hh, 0, proj), *_arg(proj, po), *_arg(act, ao),
                     B, 3 * H, H)

    def backward(self, B, H, dgh, dgo_t, pw, dhp_t, dout, douto, act, ao, hp, hpo, dx, dxo,
                 dgo, dhp):
        """At step t: dh_{t-1} = dgh_t W_hh + dhp_t (dgh at extra offset dgo_t; dhp_t = z_t dh_t,
        [B, H]), then the cell's backward of step t-1 with dout (None or the outputs' gradient,
        at douto), act and hp (h_{t-2}) at their offsets; writes dx at dxo, dgh at dgo (step
        t-1's) and dhp ([B, H], z_{t-1} dh_{t-1}). pw from pack_backward."""
        self._launch("gru_step_bwd", B, H, *_arg(dgh, dgo_t), 3 * H, pw._storage.buf,
                     *_arg(dhp_t), *_opt(dout, douto, act), *_arg(act, ao), *_arg(hp, hpo),
                     *_arg(dx, dxo), *_arg(dgh, dgo), *_arg(dhp), B, H, 3 * H)

    def forward_steps(self, S, B, H, h, ho, pw, b_hh, proj, po, out, oo, act, ao, dir=1):
        """S steps of forward from h (at ho) in one launch of one work-group, each as `forward`,
        proj / out / act at their offsets for the first step, the next steps' rows after it
        (dir 1) or before it (-1, a reverse layer); as LSTMSteps.forward_steps."""
        self._launch_steps("gru_steps_fwd", *_arg(out, oo), *_arg(h, ho), pw._storage.buf,
                           *_opt(b_hh, 0, proj), *_arg(proj, po), *_arg(act, ao), B, 3 * H, H,
                           S, dir)

    def backward_steps(self, S, B, H, dgh, dgo, pw, dhp_t, dout, douto, act, ao, h0, h0o, s_h0,
                       out, oo, dx, dxo, dhp, dir=1):
        """S steps of backward in one launch, each as `backward`, against the forward's order:
        the first at dgh's offset dgo (the dgh of the step run after it a step's rows on in the
        forward's direction dir) with dhp_t ([B, H]) that step's z * dh; act / dout / dx at the
        first step's offsets, out at the first step's h; the next steps' rows back from them;
        h0 (at h0o) is h_prev at step s_h0; dhp ([B, H]) gets the last step's z * dh."""
        self._launch_steps("gru_steps_bwd", *_arg(dgh, dgo), pw._storage.buf, *_arg(dhp_t),
                           *_opt(dout, douto, act), *_arg(act, ao), *_arg(h0, h0o), s_h0,
                           *_arg(out, oo), *_arg(dx, dxo), *_arg(dhp), B, H, 3 * H, S, dir)


_STEPS = {}
