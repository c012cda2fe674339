"""Cache folders a user can trust: made 0700, and one someone else could write into is not used
(a one-line warning and a private stand-in), the way pip treats its cache."""

from __future__ import annotations

import os
import stat

import pytest

from mlc_jupyter import config


@pytest.fixture
def root(tmp_path, monkeypatch):
    path = tmp_path / "cache"
    monkeypatch.setenv("MLC_JUPYTER_CACHE", str(path))
    return path


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_cache_folders_are_made_private_and_an_own_open_one_is_tightened(root):
    assert config.cache_dir() == root and _mode(root) == 0o700
    assert config.build_cache_dir() == root / "builds" and _mode(root / "builds") == 0o700
    loose = root / "course"
    loose.mkdir()
    loose.chmod(0o755)  # made by an older version: only readable by others
    assert config.cache_subdir("course") == loose and _mode(loose) == 0o700


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_a_cache_folder_owned_by_another_user_is_not_used_and_a_warning_says_why(root):
    root.mkdir()
    os.chown(root, 65534, 65534)  # nobody
    with pytest.warns(config.CacheWarning) as caught:
        used = config.cache_dir()
    assert used != root and _mode(used) == 0o700 and used.stat().st_uid == os.geteuid()
    (message,) = [str(w.message) for w in caught]
    assert message.startswith(f"the cache folder {root} is owned by another user (uid 65534)")
    assert "not used (as pip does)" in message and "\n" not in message
    assert config.cache_dir() == used  # once per folder: the same stand-in, no second warning


def test_a_folder_others_could_write_into_is_not_used_and_the_warning_says_how_to_fix_it(root):
    root.mkdir()
    root.chmod(0o775)  # a group-writable folder: someone else may have put a library there
    with pytest.warns(config.CacheWarning, match=r"writable by group or others \(chmod 700 it"):
        assert config.cache_dir() != root
    assert _mode(root) == 0o775, "a folder that is not used is left as it is"
