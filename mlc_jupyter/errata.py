"""The printed MLC book's known errata, and how to recognise one in a failing cell.

A learner who types a cell as the book prints it meets the book's own mistakes (a closing
parenthesis too many, a name spelled two ways, page markup inside the code). The cell error then
says that it is a known erratum of the printed book and shows the corrected line, so the learner
does not think the tool is wrong. ``scripts/book_notebooks.py`` applies the same table to the
book-as-notebooks (one list: what the notebooks correct is what the messages explain).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Erratum:
    """A mistake of the printed book: where, the text as printed, as corrected, and why.

    ``notebook`` and ``fence_line`` place it in the book-as-notebooks (the chapter notebook and
    the book line of the code fence). ``kind`` is ``typo``, ``bug`` or ``""`` (markup). ``located`` is False for a mistake whose failure shows in
    another cell (a wrong result checked later): no message can point at it.
    """

    section: str
    notebook: str
    fence_line: int
    printed: str
    corrected: str
    why: str
    kind: str = "typo"
    located: bool = True

    @property
    def note(self) -> str:
        """The edit's reason as the book-as-notebooks record it (``book typo: ...``)."""
        return f"book {self.kind}: {self.why}" if self.kind else self.why

    def lines(self, text: str) -> tuple[int, int] | None:
        """The 1-based first and last line of the printed text in ``text`` (``None``: absent)."""
        padded = "\n" + text
        index = padded.find(self.printed)
        if index < 0:
            return None
        lead = len(self.printed) - len(self.printed.lstrip("\n"))
        first = padded[: index + lead].count("\n")
        return first, first + self.printed.strip("\n").count("\n")

    def corrected_lines(self, text: str) -> list[str]:
        """The lines of ``text`` that the correction gives in place of the printed ones."""
        where = self.lines(text)
        if where is None:
            return []
        fixed = ("\n" + text).replace(self.printed, self.corrected, 1)[1:].split("\n")
        first = where[0]
        count = self.corrected.strip("\n").count("\n") + 1 if self.corrected.strip() else 0
        return fixed[first - 1 : first - 1 + count]

    def explain(self, text: str) -> str:
        """The hint for a failure in ``text`` at this erratum: what it is, and the fix."""
        fixed = [line.strip() for line in self.corrected_lines(text)]
        if not fixed:
            fix = "delete these lines"
        elif len(fixed) == 1:
            fix = f"the line should read: {fixed[0]}"
        else:
            shown = " / ".join(fixed[:3]) + (" / ..." if len(fixed) > 3 else "")
            fix = f"the lines should read: {shown}"
        return f"a known erratum of the printed book ({self.where}): {self.why}; {fix}"

    @property
    def where(self) -> str:
        """``section 4.3``, or every section that prints the same mistake (a cell typed as
        printed does not say which of them it came from)."""
        same = [
            e.section
            for e in BOOK_ERRATA
            if (e.printed, e.corrected) == (self.printed, self.corrected)
        ]
        sections = list(dict.fromkeys(same or [self.section]))
        return ("section " if len(sections) == 1 else "sections ") + ", ".join(sections)


#: The book's errata (``003_0efb66a8e9a300ba.txt``, the English MLC book), in book order.
BOOK_ERRATA: tuple[Erratum, ...] = (
    Erratum("2.4.4", "ch2_tensor_program", 676, "\nnumpy_mm_relu_v2(a_np",
            "\nlnumpy_mm_relu_v2(a_np",
            "the cell defines lnumpy_mm_relu_v2 and calls numpy_mm_relu_v2"),
    Erratum("2.4.4", "ch2_tensor_program", 779,
            "        # C\n        for j1 in range(4):\n            j = j0 * 4 + j1\n"
            "            C[i, j] = max(Y[i, j], 0)",
            "            # C\n            for j1 in range(4):\n                j = j0 * 4 + j1\n"
            "                C[i, j] = max(Y[i, j], 0)",
            "the C loop is printed outside the j0 loop, so the check fails", "bug", located=False),
    Erratum("2.5.1", "ch2_tensor_program", 1065,
            "\n    rt_lib = tvm.build(MyAdd, target=\"llvm\")\n    a_tvm = tvm.nd.array(a)\n"
            "    b_tvm = tvm.nd.array(b)\n    c_tvm = tvm.nd.array(np.empty((4, 4), dtype=np.int64))\n"
            "    rt_lib[\"add\"](a_tvm, b_tvm, c_tvm)\n    np.testing",
            "\nrt_lib = tvm.build(MyAdd, target=\"llvm\")\na_tvm = tvm.nd.array(a)\n"
            "b_tvm = tvm.nd.array(b)\nc_tvm = tvm.nd.array(np.empty((4, 4), dtype=np.int64))\n"
            "rt_lib[\"add\"](a_tvm, b_tvm, c_tvm)\nnp.testing",
            "the lines that build and check MyAdd are printed inside the class body", "bug"),
    Erratum("4.3", "ch4_auto_optimization", 2246, "sch.mod.script())))", "sch.mod.script()))",
            "a closing parenthesis too many"),
    Erratum("4.4.1", "ch4_auto_optimization", 2452, "sch.mod.script())))", "sch.mod.script()))",
            "a closing parenthesis too many"),
    Erratum("4.4.1", "ch4_auto_optimization", 2485, "sch.mod.script())))", "sch.mod.script()))",
            "a closing parenthesis too many"),
    Erratum("4.4.1", "ch4_auto_optimization", 2501, "sch.mod.script())))", "sch.mod.script()))",
            "a closing parenthesis too many"),
    Erratum("6.1.3", "ch6_1_gpu", 4246, 'np.zeros((1024,)), dtype="float32")',
            'np.zeros((1024,), dtype="float32")', "a closing parenthesis too many"),
    Erratum("6.2.2", "ch6_2_hardware", 4569, "C_accumulator[:, :, :]", "C_accumulator[:, :]",
            "the 16x16 accumulator is indexed with three slices", "bug"),
    Erratum("6.2.3", "ch6_2_hardware", 4866, "temp.repath(", "temp.relpath(",
            "TVM's tempdir has relpath, not repath"),
    Erratum("6.2.3", "ch6_2_hardware", 4895,
            "<!-- todo -->\n<!-- For CI, do not run this part of the code -->\n", "",
            "the book's page markup (two HTML comments) leaked into the cell", ""),
    Erratum("7.4", "ch7_graph_optimization", 5156, "global_var = builder_.add_func(",
            "global_var = self.builder_.add_func(",
            "builder_ is the mutator's self.builder_"),
)  # fmt: skip


def erratum_at(text: str, line: int) -> Erratum | None:
    """The known erratum a failure at 1-based ``line`` of the cell ``text`` (as typed) is on."""
    for erratum in BOOK_ERRATA:
        where = erratum.lines(text) if erratum.located else None
        if where is not None and where[0] <= line <= where[1]:
            return erratum
    return None
