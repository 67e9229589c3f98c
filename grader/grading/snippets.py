"""Python lines that repeat a failing call against the student's own file.

The values come from the grader's side (the inputs it chose), so a snippet
carries nothing the submission controls but the names of the assignment's
functions, which come from the spec.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grader import spec


def literal(value: Any) -> str:
    """A value as the student would type it back in (1.5, not np.float64(1.5))."""
    if isinstance(value, np.ndarray):
        # Python's float repr is the shortest text that reads back to the same number.
        return repr(value.tolist())
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return "sys.float_info.max" if value == spec.NO_CONTACT else repr(value)
    if isinstance(value, (int, np.integer)):
        return repr(int(value))
    return repr(value)


def snippet(calls: list[tuple[str, tuple[Any, ...]]], shown_after: tuple[str, ...] = ()) -> str:
    """Lines that import the functions called and repeat each call, printing what it gives; and, after the last
    call, the arguments named in ``shown_after`` (one it modified in place shows only there)."""
    if not calls:
        return ""
    names = sorted({name for name, _ in calls})
    lines = ["import sys", "import numpy as np", f"from {spec.MODULE_NAME} import {', '.join(names)}", ""]
    for k, (name, args) in enumerate(calls):
        params = spec.function_spec(name).params
        for param, value in zip(params, args):
            if isinstance(value, np.ndarray):
                dtype = ", dtype=int" if value.dtype.kind in "iu" else ""
                lines.append(f"{param} = np.array({literal(value)}{dtype})")
            else:
                lines.append(f"{param} = {literal(value)}")
        call = f"{name}({', '.join(params)})"
        if name == "update":
            lines += [call, "print('x =', x, 'v =', v, 'indexOld =', indexOld)"]
        else:
            lines.append(f"print({call})")
        shown = [p for p in shown_after if p in params and name != "update"] if k == len(calls) - 1 else []
        if shown:
            said = ", ".join(f"'{p} =', {p}" for p in shown)  # names from the spec: nothing the file wrote
            lines.append(f"print({said})  # after the call: it must be as it was")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"
