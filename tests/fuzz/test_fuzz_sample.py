"""A fixed sample of the fuzz suite: mutated book cells never take the kernel down, and every
error they cause is short and says where (the full run: ``bench/bench_fuzz.py``)."""

from __future__ import annotations

import pytest
from fuzz_runner import MAX_ERROR_LINES, run

#: Seeds of the sample: every mutation kind, the book's TIR, Relax and schedule cells.
SAMPLE = list(range(33))


@pytest.fixture(scope="module")
def sample():
    return run(SAMPLE, batch=len(SAMPLE))


def test_no_mutation_crashes_or_hangs_the_kernel(sample):
    assert sample.crashes == [], sample.report()
    assert len(sample.outcomes) == len(SAMPLE)


def test_every_error_is_short_and_no_traceback_reaches_the_user(sample):
    assert sample.errors, "the sample should contain failing cells"
    assert max(o["lines"] for o in sample.errors) <= MAX_ERROR_LINES, sample.report()
    assert not [o for o in sample.errors if o["raw"]], sample.report()


def test_every_error_of_a_cell_names_a_line_of_that_cell(sample):
    cells = sample.stage("cell")
    assert cells and all(o["located"] for o in cells), sample.report()


def test_an_index_out_of_bounds_is_refused_at_the_line_that_wrote_it(sample):
    refused = [o for o in sample.errors if o["error"] == "OutOfBoundsError"]
    assert refused, "the sample holds index slips (seeds 2, 32)"
    assert all(o["stage"] == "build" and o["located"] for o in refused), sample.report()


def test_most_mutations_that_parse_also_build_and_run(sample):
    assert len(sample.stage("ran")) >= 5, sample.report()
