"""``%mlc_export``: the library and its loader, run by plain Python programs in subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mlc_jupyter import compilation  # noqa: E402 - after the skip
from mlc_jupyter.deploy import export_build  # noqa: E402
from mlc_jupyter.errors import DeployError  # noqa: E402
from mlc_jupyter.models import import_model  # noqa: E402

#: A plain program: mlc_jupyter and IPython cannot be imported, the loader is found by path.
PROGRAM = """
import sys
sys.modules["mlc_jupyter"] = None  # any import of it fails
sys.modules["IPython"] = None
sys.path.insert(0, {folder!r})
import numpy as np
import {stem}

model = {stem}.load()
x = np.load({inputs!r})["x"]
np.save({out!r}, model(x))
"""


def _model():
    torch.manual_seed(0)
    layers = (torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    return torch.nn.Sequential(*layers).eval()


def _run(*args, cwd=None):
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )


def test_mlc_export_in_a_real_shell_writes_a_program_that_checks_itself(shell, tmp_path, capsys):
    shell.user_ns["model"] = _model()
    cell = "import torch\nx = torch.randn(2, 64, generator=torch.Generator().manual_seed(1))"
    assert shell.run_cell(cell).success
    assert shell.run_cell("%mlc_import model --inputs x --quiet").success
    assert shell.run_cell("%mlc_build model_relax").success
    capsys.readouterr()
    assert shell.run_cell(f"%mlc_export model_relax_lib {tmp_path / 'mlp-v1'}").success
    out = capsys.readouterr().out
    folder = tmp_path / "mlp-v1"
    assert f"wrote {folder}: mlp_v1_lib.so" in out and f"python {folder / 'mlp_v1.py'}" in out
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["mlp_v1.py", "mlp_v1_example.npz", "mlp_v1_lib.so"]
    checked = _run(str(folder / "mlp_v1.py"), cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.startswith("ok: 1 output(s), largest difference")


@pytest.mark.parametrize("params", ["bound", "inputs"])
def test_a_plain_program_without_mlc_jupyter_gives_the_models_outputs(tmp_path, params):
    model = _model()
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(2))
    built = compilation.build_module(import_model(model, x, params=params))
    exported = export_build(built, tmp_path / "mlp")
    assert (tmp_path / "mlp" / "mlp_params.npz").exists() == (params == "inputs")
    other = torch.randn(2, 64, generator=torch.Generator().manual_seed(3))
    np.savez(tmp_path / "x.npz", x=other.numpy())
    program = tmp_path / "program.py"
    program.write_text(
        PROGRAM.format(
            folder=str(exported.folder), stem="mlp", inputs=str(tmp_path / "x.npz"),
            out=str(tmp_path / "y.npy"),
        )
    )  # fmt: skip
    ran = _run(str(program), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    expected = model(other).detach().numpy()
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"), expected, rtol=1e-4, atol=1e-5)


def test_the_loader_takes_torch_tensors_misaligned_ones_too_and_names_a_wrong_input(tmp_path):
    model = _model()
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(4))
    export_build(compilation.build_module(import_model(model, x)), tmp_path / "mlp")
    script = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path / "mlp")!r})
        import torch, mlp
        model = mlp.load()
        x = torch.load({str(tmp_path / "x.pt")!r})
        flat = torch.empty(x.numel() + 1)
        view = flat[1:].view(x.shape)
        view.copy_(x)
        assert view.data_ptr() % 64
        out = model(view)
        assert isinstance(out, torch.Tensor)
        torch.save(out, {str(tmp_path / "y.pt")!r})
        try:
            model(torch.zeros(3, 64))
        except ValueError as err:
            print(err)
        """
    )
    torch.save(x, tmp_path / "x.pt")
    (tmp_path / "run.py").write_text(script)
    ran = _run(str(tmp_path / "run.py"), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    torch.testing.assert_close(torch.load(tmp_path / "y.pt"), model(x), rtol=1e-4, atol=1e-5)
    assert (
        "input 'input' has shape (3, 64) and dtype float32, expected (2, 64) float32" in ran.stdout
    )


def test_a_build_loaded_from_disk_exports_too(tmp_path):
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(5))
    imported = import_model(_model(), x)
    compilation.build_module(imported)
    compilation.wait_for_saved_builds()
    compilation.clear_cache(disk=False)
    built = compilation.build_module(imported)
    assert built.from_disk
    exported = export_build(built, tmp_path / "again")
    checked = _run(str(exported.loader), cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.startswith("ok"), checked.stderr


def test_an_unbuilt_model_and_an_unwritable_path_get_clear_errors(shell, tmp_path):
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(6))
    imported = import_model(_model(), x)
    with pytest.raises(DeployError, match="mlp_relax is not built"):
        export_build(imported, tmp_path / "out", "mlp_relax")
    (tmp_path / "file").write_text("not a folder")
    built = compilation.build_module(imported)
    with pytest.raises(
        DeployError, match=r"cannot write the export to .*file/out: Not a directory"
    ):
        export_build(built, tmp_path / "file" / "out")
    shell.user_ns["mlp_relax"] = imported
    result = shell.run_cell(f"%mlc_export mlp_relax {tmp_path / 'out'}")
    assert isinstance(result.error_in_exec, DeployError)
    assert "%mlc_build mlp_relax first" in result.error_in_exec.hint


def test_the_magic_documents_itself_and_a_missing_path_is_one_usage_line(shell):
    doc = shell.find_line_magic("mlc_export").__doc__
    assert "%mlc_export model path" in doc and "a loader to PATH" in doc
    result = shell.run_cell("%mlc_export model_relax_lib")
    assert type(result.error_in_exec).__name__ == "UsageError"
    assert "the following arguments are required: path" in str(result.error_in_exec)


def test_a_gpu_build_exports_without_a_gpu_but_does_not_run_here(tmp_path):
    from mlc_jupyter.deploy import to_torch
    from mlc_jupyter.errors import NoGPUError

    if compilation.gpu_present("cuda"):
        pytest.skip("this machine has a GPU")
    x = torch.randn(2, 64, generator=torch.Generator().manual_seed(7))
    built = compilation.build_module(import_model(_model(), x), "cuda")
    exported = export_build(built, tmp_path / "gpu")
    assert 'TARGET_KIND = "cuda"' in exported.loader.read_text()
    assert exported.library.stat().st_size > 0 and exported.data == ()
    assert "no example to check it with" in exported.describe()
    with pytest.raises(NoGPUError, match="no GPU is present: main was built for cuda"):
        to_torch(built)
