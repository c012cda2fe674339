"""Cell text -> TensorIR / Relax objects (the service behind ``%%tir`` and ``%%relax``)."""

from .parse import ParsedCell, parse_script

__all__ = ["ParsedCell", "parse_script"]
