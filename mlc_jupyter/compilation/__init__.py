"""Targets, cached builds and calls into built modules (the service behind ``%mlc_build``)."""

from .cached_build import SCHEDULES, Built, build_module, clear_cache, made_for, tir_pipeline
from .disk_cache import flush as wait_for_saved_builds
from .source import SOURCE_KINDS, generated_source
from .targets import (
    describe_target,
    device_for,
    device_kind,
    gpu_present,
    is_cpu,
    is_cuda,
    is_gpu_target,
    resolve_target,
    target_kind,
)

__all__ = [
    "SCHEDULES",
    "SOURCE_KINDS",
    "Built",
    "build_module",
    "clear_cache",
    "describe_target",
    "device_for",
    "device_kind",
    "generated_source",
    "gpu_present",
    "is_cpu",
    "is_cuda",
    "is_gpu_target",
    "made_for",
    "resolve_target",
    "target_kind",
    "tir_pipeline",
    "wait_for_saved_builds",
]
