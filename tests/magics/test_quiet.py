"""Library messages during a magic: folded below its output, the user's own warnings untouched."""

from __future__ import annotations

import copyreg
import os
import warnings

import pytest

from mlc_jupyter.magics.quiet import captured_messages, native_log_path, quiet

TVM_LINE = b"[11:22:33] /src/relax/transform.h:1261: Warning: Fast mode segfaults when ...\n"


def _noisy() -> str:
    for _ in range(3):
        os.write(2, TVM_LINE)
    warnings.warn_explicit(
        "isinstance(treespec, LeafSpec) is deprecated", FutureWarning, copyreg.__file__, 105
    )
    return "done"


def test_tvm_log_lines_and_library_warnings_become_one_folded_summary(shell, capfd):
    assert quiet(_noisy)() == "done"
    out, err = capfd.readouterr()
    assert "segfaults" not in err and "FutureWarning" not in err
    # a terminal has no fold: one summary line for a magic that worked
    assert "3 messages from TVM, 1 warning from Python libraries (folded" in out
    assert "segfaults" not in out
    assert "Fast mode segfaults" in native_log_path().read_text()  # readable after a crash too
    groups: dict[str, list[str]] = {}
    with captured_messages(groups):
        _noisy()
    assert groups["TVM"] == ["Warning: Fast mode segfaults when ..."] * 3  # once, counted
    assert groups["Python libraries"] == [
        "FutureWarning: isinstance(treespec, LeafSpec) is deprecated"
    ]


def test_an_empty_tvm_log_label_is_no_message(shell, capfd):
    def saves_an_executable() -> None:
        os.write(2, b"[11:22:33] /src/runtime/vm/executable.cc:276: Warning: Scope Saving:\n")

    groups: dict[str, list[str]] = {}
    with captured_messages(groups):
        saves_an_executable()
    assert not any(groups.values())


def test_the_users_own_warning_is_shown_as_usual():
    groups: dict[str, list[str]] = {}
    with pytest.warns(UserWarning, match="my own warning"), captured_messages(groups):
        warnings.warn("my own warning", UserWarning, stacklevel=1)
    assert not any(groups.values())


def test_the_workbenchs_own_warnings_are_shown_in_one_line_even_from_an_installed_copy():
    """As installed from a wheel, the package's files are a library's: its warnings to the user
    (RPC without authentication, a cache not used) still reach the cell, never folded away."""
    from mlc_jupyter.config import CacheWarning
    from mlc_jupyter.errors import InsecureRPCWarning

    groups: dict[str, list[str]] = {}
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        with captured_messages(groups):
            for category in (InsecureRPCWarning, CacheWarning):
                warnings.warn_explicit("said to the user", category, copyreg.__file__, 105)
    assert not groups["Python libraries"]
    assert [w.category for w in shown] == [InsecureRPCWarning, CacheWarning]
    for w in shown:
        text = warnings.formatwarning(w.message, w.category, w.filename, w.lineno, w.line)
        assert text.count("\n") == 1 and "said to the user" in text


def test_messages_are_kept_when_the_magic_fails(shell, capfd):
    def failing() -> None:
        os.write(2, TVM_LINE)
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        quiet(failing)()
    out, err = capfd.readouterr()
    assert "1 message from TVM" in out and "segfaults" not in err
    assert "Warning: Fast mode segfaults" in out  # a failed magic shows them all


def test_every_magic_of_the_package_runs_quietly(shell):
    for magics in shell.magics_manager.magics.values():
        for name, func in magics.items():
            if name.startswith("mlc_") or name in ("tir", "relax"):
                assert func.__module__ == "mlc_jupyter.magics.quiet", name


def test_the_logs_of_kernels_gone_for_a_day_are_swept_and_the_others_kept(tmp_path):
    import os
    import time

    from mlc_jupyter.magics.quiet import LOG_KEEP_S, sweep_logs

    day_ago = time.time() - LOG_KEEP_S - 60
    gone_old, gone_new = (
        tmp_path / "magic-stderr-999999999.log",
        tmp_path / "magic-stderr-999999998.log",
    )
    alive_old = tmp_path / f"magic-stderr-{os.getpid()}.log"
    for log in (gone_old, gone_new, alive_old):
        log.write_text("Warning: something\n")
    os.utime(gone_old, (day_ago, day_ago))
    os.utime(alive_old, (day_ago, day_ago))
    assert sweep_logs(tmp_path, LOG_KEEP_S) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (gone_new, alive_old)
    )
