"""BatchNorm1d, BatchNorm2d and BatchNorm3d: per-channel normalisation with running statistics."""
from ... import dtypes
from ...ops.creation import ones, tensor, zeros
from .. import functional as F
from .module import Module
from .normalization import affine_parameters, reset_affine

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]


class _BatchNorm(Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        affine_parameters(self, (num_features,), affine, bias, device, dtype)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked",
                                 tensor(0, dtype=dtypes.int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self):
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self):
        """Reset the running statistics, and the affine weight to 1 and bias to 0."""
        self.reset_running_stats()
        reset_affine(self)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                # a cumulative moving average (one host read per batch)
                factor = 1.0 / float(self.num_batches_tracked.item())
        # without running statistics the batch's own are used in evaluation too
        use_batch_stats = self.training or (self.running_mean is None and
                                            self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch_stats, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalisation over (N, C) or (N, C, L) inputs: in training, each channel is
    normalised by the batch's mean and (biased) variance, and the running statistics move
    towards them by `momentum` (the variance unbiased); in evaluation the running ones are used.

    >>> import clgrad
    >>> bn = clgrad.nn.BatchNorm1d(3)
    >>> _ = bn(clgrad.randn(8, 3) * 2 + 5)
    >>> bn.num_batches_tracked.item(), bn
    (1, BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True))
    """

    def _check_input_dim(self, input):
        if input.dim() != 2 and input.dim() != 3:
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Batch normalisation over (N, C, H, W) inputs, per channel.

    >>> import clgrad
    >>> bn = clgrad.nn.BatchNorm2d(4, affine=False).eval()
    >>> bn(clgrad.ones(2, 4, 3, 3)).shape
    clgrad.Size([2, 4, 3, 3])
    """

    def _check_input_dim(self, input):
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Batch normalisation over (N, C, D, H, W) inputs, per channel.

    >>> import clgrad
    >>> bn = clgrad.nn.BatchNorm3d(2)
    >>> bn(clgrad.randn(2, 2, 3, 2, 2)).shape
    clgrad.Size([2, 2, 3, 2, 2])
    """

    def _check_input_dim(self, input):
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")
