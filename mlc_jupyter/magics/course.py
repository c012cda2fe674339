"""Course mode: every ordinary code cell runs in the MLC book's TVM spelling (``%mlc_course``).

After ``%load_ext mlc_jupyter`` each cell goes through IPython's ``input_transformers_post`` hook:
the shared rule table rewrites the course's spelling to TVM 0.27's (and to the course shims,
:mod:`mlc_jupyter.course`, reached as ``mlc_course``), keeping every line in place. Failures
inside TVM are shown as the project's short message at the line and column the user typed (an
IPython custom exception handler, installed only while course mode is on and only if no other
handler is set). Each top-level TVMScript definition is followed by the ``%%tir`` magic's
loop-extent check (an IPython AST transform), and each ``i, j, k = sch.get_loops(b)`` notes the
names of the handles, so traces show them (another). ``%mlc_course off`` removes them all: cells
run as typed on stock TVM 0.27.
"""

from __future__ import annotations

import linecache
from collections import OrderedDict
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.display import display

from .. import course as course_shims
from .. import origins
from ..cells.course import locate_failure, translate_cell
from ..cells.course_transforms import CheckDefinitions, NameScheduleHandles
from ..course.progress import set_progress_view
from ..dialect import COURSE_NAME, Translation
from ..display.course import course_bundle
from .course_state import COURSE_MODE_ATTRIBUTE, course_mode
from .progress import LiveTuneProgress

#: How many translated cells are remembered to place their errors (one per cell run).
_REMEMBERED = 64
_MAGIC_CALL = "get_ipython().run_line_magic('mlc_course'"


class CourseMode:
    """The state of course mode in one shell: on/off, and the cells it translated."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.enabled = False
        self.last: Translation | None = None
        self.cells: OrderedDict[tuple[str, ...], Translation] = OrderedDict()
        self.owns_handler = False
        self.checks = CheckDefinitions()
        self.handle_names = NameScheduleHandles()

    def transform(self, lines: list[str]) -> list[str]:
        """IPython's hook: the cell's lines in TVM 0.27's spelling (raises a located error)."""
        if not self.enabled:
            return lines
        text = "".join(lines)
        translation = translate_cell(text)
        if not text.lstrip().startswith(_MAGIC_CALL):
            self.last = translation
        self.shell.user_ns[COURSE_NAME] = course_shims
        origins.remember_python_cell(translation, f"In [{self.shell.execution_count}]")
        if translation.changed or translation.gone:
            self.cells[_key(translation.source)] = translation
            while len(self.cells) > _REMEMBERED:
                self.cells.popitem(last=False)
        return translation.source.splitlines(keepends=True)

    def turn_on(self) -> None:
        if self.enabled:
            return
        self.enabled = True
        self.shell.user_ns[COURSE_NAME] = course_shims
        if self.transform not in self.shell.input_transformers_post:
            self.shell.input_transformers_post.append(self.transform)
        for step in (self.checks, self.handle_names):
            if step not in self.shell.ast_transformers:
                self.shell.ast_transformers.append(step)
        if not self.shell.custom_exceptions:
            self.shell.set_custom_exc((Exception,), self._show_error)
            self.owns_handler = True
        set_progress_view(lambda: LiveTuneProgress(self.shell, quiet=False))

    def turn_off(self) -> None:
        self.enabled = False
        set_progress_view(None)
        if self.transform in self.shell.input_transformers_post:
            self.shell.input_transformers_post.remove(self.transform)
        for step in (self.checks, self.handle_names):
            if step in self.shell.ast_transformers:
                self.shell.ast_transformers.remove(step)
        if self.owns_handler:
            self.shell.set_custom_exc((), None)
            self.owns_handler = False

    def _show_error(self, shell: Any, etype: type, value: BaseException, tb: Any,
                    tb_offset: int | None = None) -> None:  # fmt: skip
        """IPython's custom exception handler: short located errors for failures inside TVM."""
        if issubclass(etype, SyntaxError):
            shell.showsyntaxerror()
            return None
        if issubclass(etype, UsageError):  # a magic's usage message: IPython's one line
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
            return None
        cell = self._cell_of(tb)
        located = locate_failure(value, *cell) if cell is not None else None
        if located is not None:
            located.__traceback__ = tb
            shell._showtraceback(etype, value, located.render_lines())
            return None
        with self._as_typed(tb):
            shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
        return None

    def _cell_files(self, tb: Any) -> list[str]:
        names = []
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename
            if self._is_cell(name):
                names.append(name)
            tb = tb.tb_next
        return names

    def _is_cell(self, name: str) -> bool:
        try:
            return self.shell.compile.format_code_name(name) is not None
        except Exception:  # noqa: BLE001 - an IPython without cell names: nothing to place
            return False

    def _translation_of(self, name: str) -> Translation:
        lines = linecache.getlines(name)
        return self.cells.get(_key("".join(lines))) or Translation("".join(lines), "".join(lines))

    def _cell_of(self, tb: Any) -> tuple[str, Translation] | None:
        names = self._cell_files(tb)
        if not names:
            return None
        return names[-1], self._translation_of(names[-1])

    def _as_typed(self, tb: Any) -> Any:
        """Show a Python traceback with the cells' lines as the user typed them."""
        return _LinesAsTyped({n: self._translation_of(n) for n in set(self._cell_files(tb))})


class _LinesAsTyped:
    """While active, ``linecache`` holds the typed text of translated cells (same line count)."""

    def __init__(self, cells: dict[str, Translation]) -> None:
        self.cells = {n: t for n, t in cells.items() if t.changed}
        self.saved: dict[str, Any] = {}

    def __enter__(self) -> None:
        for name, translation in self.cells.items():
            entry = linecache.cache.get(name)
            if entry is not None:
                self.saved[name] = entry
                lines = translation.original.splitlines(keepends=True)
                linecache.cache[name] = (len(translation.original), None, lines, name)

    def __exit__(self, *exc: Any) -> None:
        linecache.cache.update(self.saved)


def _key(text: str) -> tuple[str, ...]:
    return tuple(text.splitlines())


@magics_class
class CourseMagics(Magics):
    """``%mlc_course [on|off]``."""

    def __init__(self, shell: Any, mode: CourseMode) -> None:
        super().__init__(shell)
        self.mode = mode

    @line_magic
    def mlc_course(self, line: str) -> None:
        """Course mode: ``%mlc_course`` shows whether ordinary cells are translated from the MLC
        course's TVM spelling and, side by side, what the last cell became; ``%mlc_course on`` /
        ``off`` switches it (off: cells run as typed on stock TVM 0.27)."""
        arg = line.strip().lower()
        if arg == "on":
            self.mode.turn_on()
        elif arg == "off":
            self.mode.turn_off()
        elif arg:
            raise UsageError(f"%mlc_course takes on, off or nothing, not {line.strip()!r}")
        display(course_bundle(self.mode.enabled, self.mode.last), raw=True)


def register(ipython: Any) -> None:
    """Register ``%mlc_course`` and turn course mode on."""
    mode = course_mode(ipython)
    if mode is None:
        mode = CourseMode(ipython)
        setattr(ipython, COURSE_MODE_ATTRIBUTE, mode)
    ipython.register_magics(CourseMagics(ipython, mode))
    mode.turn_on()
