"""torch.stft and torch.istft: short-time Fourier transforms over frames of a signal, built from
the fft ops (clgrad.ops.fft) on (re, im) pairs, Tensor.unfold for the frames and index_add for
istft's overlap-add; differentiable through those.

>>> import clgrad
>>> x = clgrad.arange(64.0)
>>> w = clgrad.hann_window(16)
>>> s = clgrad.stft(x, 16, window=w, return_complex=True)
>>> s.shape
clgrad.Size([9, 17])
>>> bool((clgrad.istft(s, 16, window=w) - x).abs().max() < 1e-3)
True
"""
import math

from .. import dtypes
from . import fft as _f
from .complexes import view_as_complex, view_as_real
from .creation import arange, zeros
from .join import stack
from .shape import constant_pad_nd, pad as _pad


def _torch_type(x):
    name = dtypes.TORCH_NAMES.get(x.dtype, x.dtype.name)
    return f"torch.{name}Tensor"


def _times_window(frames, w):
    """Frames of pairs [..., n_fft, 2] times the window w (real, or complex: the complex
    product written on pairs)."""
    if not w.dtype.is_complex:
        return frames * w.unsqueeze(-1)
    wp = view_as_real(w)
    a, b = frames[..., 0], frames[..., 1]
    c, d = wp[..., 0], wp[..., 1]
    return stack([a * c - b * d, a * d + b * c], -1)


def _window(window, win_length, n_fft, fail):
    """The window (ones when None) zero-padded on both sides to n_fft, as torch centres it."""
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        fail(f"expected a 1D window tensor of size equal to win_length={win_length}, but got "
             f"window with size [{', '.join(str(s) for s in window.shape)}]")
    left = (n_fft - win_length) // 2
    if window is None:
        return None if win_length == n_fft else \
            constant_pad_nd(zeros(win_length) + 1, (left, n_fft - win_length - left))
    if win_length == n_fft:
        return window
    return constant_pad_nd(window, (left, n_fft - win_length - left))


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform of a 1-d signal or a batch [B, L] of them:
    [B,] n_freq x n_frames, each column the fft of a frame of n_fft samples, hop_length apart,
    times the window (centred in n_fft, rectangular when None); `center` pads the signal by
    n_fft // 2 on both sides with `pad_mode`. Real signals need `return_complex` (False gives the
    (re, im) pairs as a last dim, as torch's view_as_real).

    >>> import clgrad
    >>> clgrad.stft(clgrad.ones(8), 4, center=False, return_complex=True)
    tensor([[4.+0.j, 4.+0.j, 4.+0.j, 4.+0.j, 4.+0.j],
            [0.+0.j, 0.+0.j, 0.+0.j, 0.+0.j, 0.+0.j],
            [0.+0.j, 0.+0.j, 0.+0.j, 0.+0.j, 0.+0.j]])
    """
    x = input
    cplx = x.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not cplx:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    if x.dim() not in (1, 2):
        shape = ", ".join(str(s) for s in x.shape)
        raise RuntimeError(f"stft({_torch_type(x)}[{shape}], n_fft={n_fft}) : expected a 1D or "
                           f"2D tensor")
    if not x.dtype.is_complex:
        x = x.to(_f.fft_dtype(x))
    batched = x.dim() == 2
    if not batched:
        x = x.unsqueeze(0)
    if cplx:                    # the signal as pairs [B, L, 2]
        x = view_as_real(x) if x.dtype.is_complex else _f.real_pairs(x)
    if center:                  # the signal's dim last for pad (which pads the last dims)
        p = n_fft // 2
        x = _pad(x.movedim(-1, 0), (p, p), mode=pad_mode).movedim(0, -1) if cplx else \
            _pad(x.unsqueeze(0), (p, p), mode=pad_mode).squeeze(0)

    def fail(msg):
        shape = list(x.shape[:-1] if cplx else x.shape)[1 - batched:]
        raise RuntimeError(f"stft({_torch_type(input)}[{', '.join(map(str, shape))}], "
                           f"n_fft={n_fft}, hop_length={hop}, win_length={win}) : {msg}")

    L = x.shape[-2] if cplx else x.shape[-1]
    if not 0 < n_fft <= L:
        fail(f"expected 0 < n_fft < {L}, but got n_fft={n_fft}")
    if hop <= 0:
        fail(f"expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        fail(f"expected 0 < win_length <= n_fft, but got win_length={win}")
    w = _window(window, win, n_fft, fail)
    if onesided is None:
        onesided = not cplx
    if onesided and cplx:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    scale = 1.0 / math.sqrt(n_fft) if normalized else 1.0
    # align_to_window: frames of win_length samples hop apart (the window's own), centred in
    # n_fft by zeros, rather than frames of n_fft whose middle the window covers
    size, left = (win, (n_fft - win) // 2) if align_to_window else (n_fft, 0)
    if align_to_window:
        w = window
    if cplx:
        frames = x.unfold(-2, size, hop).transpose(-1, -2)      # [B, T, size, 2]
        if w is not None:
            frames = _times_window(frames, w)
        if size < n_fft:
            frames = constant_pad_nd(frames, (0, 0, left, n_fft - size - left))
        pairs = _f.C2C.apply(frames, False, scale)
    else:
        frames = x.unfold(-1, size, hop)                        # [B, T, size]
        if w is not None:
            frames = frames * w
        if size < n_fft:
            frames = constant_pad_nd(frames, (left, n_fft - size - left))
        pairs = _f.R2C.apply(frames, False, scale, onesided)
    pairs = pairs.transpose(-3, -2)                             # [B, n_freq, T, 2]
    if not batched:
        pairs = pairs.squeeze(0)
    return view_as_complex(pairs) if return_complex else pairs


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: the signal whose stft `input` ([B,] n_freq x n_frames, complex) is,
    by the inverse transform of each frame, overlap-added and divided by the summed squared
    window; `length` cuts or zero-pads the result.

    >>> import clgrad
    >>> x = clgrad.arange(16.0)
    >>> s = clgrad.stft(x, 8, window=clgrad.hann_window(8), return_complex=True)
    >>> bool((clgrad.istft(s, 8, window=clgrad.hann_window(8)) - x).abs().max() < 1e-4)
    True
    """
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop = n_fft // 4 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def fail(msg):
        shape = ", ".join(str(s) for s in input.shape)
        raise RuntimeError(f"istft({_torch_type(input)}[{shape}], n_fft={n_fft}, "
                           f"hop_length={hop}, win_length={win}, center={int(center)}) {msg}")

    if input.dim() not in (2, 3):
        fail(f": expected a tensor with 2 or 3 dimensions of complex, but got {input.dim()}")
    batched = input.dim() == 3
    z = input if batched else input.unsqueeze(0)
    n_freq, T = z.shape[-2], z.shape[-1]
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_fft // 2 + 1 != n_freq:
        fail(f": expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft / 2 + 1 when onesided=True, but got {n_freq}")
    if not onesided and n_fft != n_freq:
        fail(f": expected the frequency dimension (3rd to the last) of the input tensor to match "
             f"n_fft when onesided=False, but got {n_freq}")
    if not 0 < hop:
        fail(f": expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        fail(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    w = _window(window, win, n_fft, fail)
    if w is not None and w.dtype.is_complex:
        raise RuntimeError("istft: complex windows are not supported by clgrad")
    scale = 1.0 / math.sqrt(n_fft) if normalized else 1.0 / n_fft
    pairs = view_as_real(z).transpose(-3, -2)            # [B, T, n_freq, 2]
    if return_complex:
        if onesided:
            raise RuntimeError("Cannot have onesided output if window or input is complex")
        frames = _f.C2C.apply(pairs, True, scale)        # [B, T, n_fft, 2]
    else:
        if not onesided:
            pairs = pairs.narrow(-2, 0, n_fft // 2 + 1)
        frames = _f.C2R.apply(pairs, n_fft, True, scale)  # [B, T, n_fft]
    dev, dt = frames.device, frames.dtype
    if w is None:
        w = zeros(n_fft, dtype=dt, device=dev) + 1
    frames = frames * (w.unsqueeze(-1) if return_complex else w)
    # overlap-add: sample t * hop + k of the signal collects sample k of frame t
    n_out = n_fft + hop * (T - 1)
    idx = (arange(T, device=dev).unsqueeze(1) * hop + arange(n_fft, device=dev)).reshape(-1)
    B = frames.shape[0]
    tail = (2,) if return_complex else ()
    y = zeros((B, n_out) + tail, dtype=dt, device=dev).index_add(
        1, idx, frames.reshape((B, T * n_fft) + tail))
    ww = (w * w).repeat(T)                               # the squared window, overlap-added
    env = zeros(n_out, dtype=ww.dtype, device=dev).index_add(0, idx, ww)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (-(n_fft // 2) if center else n_out)
    y, env = y[:, start:end], env[start:end]
    if env.numel() and bool((env.abs().min() < 1e-11).item()):
        fail("window overlap add min: 1")
    y = y / (env.unsqueeze(-1) if return_complex else env)
    if end > n_out:
        y = constant_pad_nd(y, (0, 0) * return_complex + (0, end - n_out))
    if return_complex:
        y = view_as_complex(y)
    return y if batched else y.squeeze(0)


FUNCTIONS = {"stft": stft, "istft": istft}
METHODS = {"stft": stft, "istft": istft}

__all__ = ["stft", "istft"]
