"""Course mode's state as the other magics read it (the stepper's spelling), without importing
``%mlc_course``'s module: one magic family never imports another.
"""

from __future__ import annotations

from typing import Any

#: Where ``%mlc_course`` keeps a shell's course mode (its ``CourseMode``: on or off, the cells
#: it translated).
COURSE_MODE_ATTRIBUTE = "_mlc_course_mode"


def course_mode(shell: Any) -> Any:
    """The shell's course mode, ``None`` before ``%mlc_course`` registered."""
    return getattr(shell, COURSE_MODE_ATTRIBUTE, None)


def course_spelling_options(shell: Any) -> dict[str, Any]:
    """A stepper's spelling: the course's when course mode is on (TVM 0.27's one choice away)."""
    mode = course_mode(shell)
    on = mode is not None and mode.enabled
    return {"spelling": "course", "offer_course_spelling": True} if on else {}
