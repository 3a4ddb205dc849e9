"""BatchNorm1d, BatchNorm2d and BatchNorm3d: per-channel normalisation with running statistics."""
from ... import dtypes
from ...autograd.function import Function
from ...ops.creation import ones, tensor, zeros
from ...ops.join import stack
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


def _channel_dims(x):
    return [0] + list(range(2, x.dim()))


def _all_reduce_sum(t, group):
    # function-level: points up the layer map on purpose: distributed sits above nn
    from ... import distributed as dist
    t = t.contiguous()
    dist.all_reduce(t, group=group)
    return t


class _SyncBatchNormFunction(Function):
    """Batch normalisation with the statistics of the whole global batch: per-channel sums
    all-reduced in forward (two passes: the mean, then the squared deviations, so no
    cancellation), and the two per-channel sums of the input gradient all-reduced in backward.
    The parameters' gradients stay per rank: DistributedDataParallel averages them as any
    other."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, group):
        dims = _channel_dims(x)
        shape = [1, x.shape[1]] + [1] * (x.dim() - 2)
        count = _all_reduce_sum(tensor([float(x.numel() // max(x.shape[1], 1))],
                                       dtype=dtypes.float64, device=x.device), group).item()
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(x.shape)} over all ranks")
        mean = _all_reduce_sum(x.sum(dims), group) / count
        centred = x - mean.reshape(shape)
        var = _all_reduce_sum((centred * centred).sum(dims), group) / count
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.detach() * momentum)
            running_var.mul_(1 - momentum).add_(var.detach() * (momentum * count / (count - 1)))
        invstd = (var + eps).rsqrt()
        xhat = centred * invstd.reshape(shape)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.count, ctx.group, ctx.shape = count, group, shape
        y = xhat
        if weight is not None:
            y = y * weight.reshape(shape)
        if bias is not None:
            y = y + bias.reshape(shape)
        return y

    @staticmethod
    def backward(ctx, g):
        xhat, invstd, weight = ctx.saved_tensors
        dims, shape = _channel_dims(g), ctx.shape
        g_sum, gx_sum = g.sum(dims), (g * xhat).sum(dims)
        both = _all_reduce_sum(stack([g_sum, gx_sum]), ctx.group) / ctx.count
        scale = invstd if weight is None else invstd * weight
        gx = (g - both[0].reshape(shape) - xhat * both[1].reshape(shape)) * scale.reshape(shape)
        gw = gx_sum if weight is not None else None
        gb = g_sum if weight is not None or ctx.needs_input_grad[2] else None
        return gx, gw, gb, None, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """Batch normalisation whose training statistics cover the whole batch of all ranks of a
    process group (clgrad.distributed over MPI), as torch's; with no initialised group or a
    group of one it is an ordinary batch norm. Any input of at least 2 dimensions.

    >>> import clgrad
    >>> bn = clgrad.nn.SyncBatchNorm(3)          # no process group: a plain batch norm
    >>> bn(clgrad.randn(4, 3, 2)).shape
    clgrad.Size([4, 3, 2])
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype,
                         bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        # function-level: points up the layer map on purpose: distributed sits above nn
        from ... import distributed as dist
        self._check_input_dim(input)
        sync = self.training and dist.is_available() and dist.is_initialized() and \
            dist.get_world_size(self.process_group) > 1
        if not sync:
            return super().forward(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        track = self.track_running_stats
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean if track else None,
            self.running_var if track else None, self.eps, factor, self.process_group)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every BatchNorm*d replaced by a SyncBatchNorm holding the same
        parameters and statistics (recursively), as torch's.

        >>> import clgrad
        >>> m = clgrad.nn.SyncBatchNorm.convert_sync_batchnorm(clgrad.nn.Sequential(
        ...     clgrad.nn.BatchNorm2d(2)))
        >>> type(m[0]).__name__
        'SyncBatchNorm'
        """
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            out.running_mean, out.running_var = module.running_mean, module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
