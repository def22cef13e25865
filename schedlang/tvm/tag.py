"""TE's ``tag_scope``: the default tag of the computes made inside it (TOPI tags its operators
with it, e.g. ``@te.tag_scope(tag="conv2d_nchw")``, and its schedules read ``op.tag``)."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from ..errors import AlgorithmError


class TagScope:
    """A tag for the computes made while it is entered: a context manager, or a decorator
    that enters it around each call of the function. Scopes do not nest (as in TE)."""

    _current: TagScope | None = None

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.accessed = False

    @classmethod
    def get_current(cls) -> TagScope | None:
        """The scope entered now, if any (marked as used)."""
        if cls._current is not None:
            cls._current.accessed = True
        return cls._current

    def __enter__(self) -> TagScope:
        if TagScope._current is not None:
            raise AlgorithmError(
                f"tag_scope('{self.tag}') inside tag_scope('{TagScope._current.tag}'): "
                "tag scopes do not nest; tag the inner computes with compute(..., tag=...)"
            )
        TagScope._current = self
        return self

    def __exit__(self, *exc: object) -> None:
        TagScope._current = None
        if not self.accessed and exc[0] is None:
            warnings.warn(
                f"tag_scope('{self.tag}') was not used: no compute was made inside it",
                stacklevel=2,
            )

    def __call__(self, function: Callable) -> Callable:
        @functools.wraps(function)
        def tagged(*args: object, **kwargs: object) -> object:
            with self:
                return function(*args, **kwargs)

        return tagged


def tag_scope(tag: str) -> TagScope:
    """Tag the computes made inside: ``with te.tag_scope("gemm"): C = te.compute(...)`` or
    ``@te.tag_scope(tag="conv")`` on a function that makes them; ``C.op.tag`` is the tag."""
    return TagScope(tag)


def scoped_tag(tag: str, name: str) -> str:
    """The tag a compute named `name` gets: `tag`, or the tag of the scope entered now (a
    compute inside a scope that also gives a tag is refused, as in TE)."""
    scope = TagScope.get_current()
    if scope is None:
        return tag
    if tag:
        raise AlgorithmError(
            f"compute '{name}' gives tag='{tag}' inside tag_scope('{scope.tag}'): "
            "tags do not nest; give the tag in one place"
        )
    return scope.tag
