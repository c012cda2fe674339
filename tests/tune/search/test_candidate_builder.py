"""The tuner's builder compiles a candidate as a build compiles the kernel it becomes."""

from __future__ import annotations

from build_support import through_local_buffer

from mlc_jupyter.compilation.targets import resolve_target
from mlc_jupyter.tune.search.candidate_builder import build_candidate


def test_a_cpu_candidate_is_lowered_as_its_build_is():
    # timed with its register tile on the heap, a candidate would be slower than it builds
    built = build_candidate(through_local_buffer(448), resolve_target(None))
    assert "TVMBackendAllocWorkspace" not in built.mod.inspect_source("ll")
