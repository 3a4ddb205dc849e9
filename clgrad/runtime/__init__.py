"""The runtime layer: devices, queues, memory pools, kernel templates and programs."""
from .device import Device, NoDeviceError, default_device, devices, get_device
from .kernels import KernelBuildError, Program, get_kernel, launch, render
from .memory import OutOfMemoryError

__all__ = ["Device", "NoDeviceError", "default_device", "devices", "get_device",
           "KernelBuildError", "Program", "get_kernel", "launch", "render", "OutOfMemoryError"]
