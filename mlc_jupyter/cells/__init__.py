"""Cell text -> TensorIR / Relax objects (the service behind ``%%tir`` and ``%%relax``)."""

from .parse import parse_script

__all__ = ["parse_script"]
