"""``tvm.transform.PassContext``: the build options TE programs set around ``tvm.build``.

schedlang's lowering has no pass list to configure. The options whose effect it already has
are accepted: ``"tir.UnrollLoop"`` (unrolling up to ``auto_max_step`` steps of loops the
schedule did not mark; LLVM's ``-O3`` unrolls short loops of a kernel, and a schedule asks for
more with ``unroll`` or ``pragma(axis, "auto_unroll_max_step", n)``). Any other option, and
passes named to require or disable, are refused by name rather than ignored.
"""

from __future__ import annotations

from ..errors import SchedlangError

ACCEPTED = ("tir.UnrollLoop",)


class PassContext:
    def __init__(
        self,
        opt_level: int = 2,
        required_pass=None,
        disabled_pass=None,
        instruments=None,
        config: dict | None = None,
    ) -> None:
        for key in config or {}:
            if key not in ACCEPTED:
                raise SchedlangError(
                    f"PassContext: the option {key!r} has no counterpart in schedlang "
                    f"(accepted: {', '.join(ACCEPTED)})"
                )
        named = list(required_pass or []) + list(disabled_pass or [])
        if named:
            raise SchedlangError(
                f"PassContext: schedlang has no passes to require or disable ({named[0]!r})"
            )
        self.opt_level = opt_level
        self.config = dict(config or {})

    def __enter__(self) -> PassContext:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
