"""The fuzz suite in full: seeded mutations of the MLC book's cells, run as a learner would.

Each mutation (a dropped line, a changed number, a swapped name, an index shifted by one, a
duplicated or swapped line, a dtype, an indentation, a typo, an operator, an axis kind) of a
book listing or schedule cell runs in a real IPython shell with the extension: the cell, then
``%mlc_build`` of what it bound, then a call of every function on random data. Batches run in
subprocess workers, so a mutation that kills its worker is counted as a crash. Prints:
mutations, cell errors (parse and schedule), build errors, run errors, cells that built and ran,
crashes, hangs, how many errors name their cell line, the longest error, and examples of what
fell short. Target: 0 crashes, every error at most 25 lines and located.

Usage: ``python bench/bench_fuzz.py [--count 1000] [--first-seed 0] [--batch 50]
[--json out.json]``. Run it on a quiet machine; a thousand mutations take tens of minutes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fuzz"))

from fuzz_runner import run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="mutations (default 1000)")
    parser.add_argument("--first-seed", type=int, default=0, help="seed of the first mutation")
    parser.add_argument("--batch", type=int, default=50, help="mutations per worker process")
    parser.add_argument("--examples", type=int, default=5, help="examples of each shortfall")
    parser.add_argument("--json", default=None, help="also write every outcome to this file")
    args = parser.parse_args()
    seeds = list(range(args.first_seed, args.first_seed + args.count))
    summary = run(seeds, batch=args.batch)
    print(summary.report(examples=args.examples))
    if args.json:
        Path(args.json).write_text(json.dumps(summary.outcomes, indent=1))


if __name__ == "__main__":
    main()
