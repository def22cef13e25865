"""TVM's data layouts (``tvm.tir.layout("NCHW16c")``, ``tvm.tir.bijective_layout``): the
dimensions a layout names, and the shapes and indices of data converted between two layouts.

An upper-case letter is a primal dimension; ``16c`` splits the primal ``C`` into blocks of 16,
``c`` being the index inside a block. Converting gives each target dimension the extent TVM's
bijective layouts give it: a primal dimension divided by a block size it does not fill rounds
up."""

from __future__ import annotations

import re

from ..errors import AlgorithmError

_AXIS = re.compile(r"(\d*)([A-Za-z])")


class Layout:
    """A parsed layout: ``axes`` is ``[(letter, factor)]``, the factor set for a sub-dimension
    (lower case) and None for a primal one."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.axes = _parse(name)

    def __len__(self) -> int:
        return len(self.axes)

    def __getitem__(self, index: int) -> str:
        return self.axes[index][0]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and other.axes == self.axes

    def __hash__(self) -> int:
        return hash(self.name)

    def __str__(self) -> str:
        return self.name

    def primal(self) -> list[str]:
        return [letter for letter, factor in self.axes if factor is None]

    def index_of(self, letter: str) -> int:
        """The position of dimension `letter`, -1 if the layout lacks it (as TVM's)."""
        letters = [name for name, _ in self.axes]
        return letters.index(letter) if letter in letters else -1

    def factor_of(self, letter: str) -> int:
        """The block size of the sub-dimension of `letter` (either case), -1 if none."""
        for name, factor in self.axes:
            if name == letter.lower() and factor is not None:
                return factor
        return -1

    def primal_extents(self, shape) -> dict[str, object]:
        """The extent of each primal dimension of data of `shape` laid out as this."""
        extents = {}
        for (letter, factor), extent in zip(self.axes, shape):
            if factor is None:
                inner = self.factor_of(letter)
                extents[letter] = extent * inner if inner > 0 else extent
        return extents

    def primal_index(self, index) -> dict[str, object]:
        """The index along each primal dimension of the element at `index`."""
        primal: dict[str, object] = {}
        for (letter, factor), i in zip(self.axes, index):
            if factor is None:
                inner = self.factor_of(letter)
                primal[letter] = primal.get(letter, 0) + (i * inner if inner > 0 else i)
            else:
                primal[letter.upper()] = primal.get(letter.upper(), 0) + i
        return primal

    def index(self, primal) -> tuple:
        """The index, in this layout, of the element at the primal indices `primal`."""
        out = []
        for letter, factor in self.axes:
            if factor is None:
                inner = self.factor_of(letter)
                out.append(primal[letter] // inner if inner > 0 else primal[letter])
            else:
                out.append(primal[letter.upper()] % factor)
        return tuple(out)

    def shape(self, extents) -> tuple:
        """The shape, in this layout, of data whose primal dimensions have `extents`."""
        out = []
        for letter, factor in self.axes:
            inner = self.factor_of(letter) if factor is None else -1
            if factor is not None:
                out.append(factor)
            elif inner > 0:
                out.append((extents[letter] + inner - 1) // inner)
            else:
                out.append(extents[letter])
        return tuple(out)


class BijectiveLayout:
    """The conversion between two layouts of the same primal dimensions."""

    def __init__(self, src: Layout, dst: Layout) -> None:
        if sorted(src.primal()) != sorted(dst.primal()):
            raise AlgorithmError(f"cannot convert layout {src} to {dst}: their dimensions differ")
        self.src_layout, self.dst_layout = src, dst

    def forward_shape(self, shape) -> tuple:
        return self.dst_layout.shape(self.src_layout.primal_extents(shape))

    def backward_shape(self, shape) -> tuple:
        return self.src_layout.shape(self.dst_layout.primal_extents(shape))

    def forward_index(self, index) -> tuple:
        return self.dst_layout.index(self.src_layout.primal_index(index))

    def backward_index(self, index) -> tuple:
        return self.src_layout.index(self.dst_layout.primal_index(index))


def layout(name: str, dtype: str = "int32") -> Layout:
    return Layout(name)


def bijective_layout(src, dst) -> BijectiveLayout:
    src = src if isinstance(src, Layout) else Layout(src)
    dst = dst if isinstance(dst, Layout) else Layout(dst)
    return BijectiveLayout(src, dst)


def _parse(name: str) -> list[tuple[str, int | None]]:
    parsed = []
    position = 0
    for match in _AXIS.finditer(name):
        if match.start() != position:
            break
        digits, letter = match.groups()
        if letter.isupper() == bool(digits):
            break
        parsed.append((letter, int(digits) if digits else None))
        position = match.end()
    letters = [letter for letter, _ in parsed]
    if position != len(name) or not parsed or len(set(letters)) != len(letters):
        raise AlgorithmError(f"'{name}' is not a layout such as NCHW or NCHW16c")
    for letter, factor in parsed:
        if factor is not None and letter.upper() not in letters:
            raise AlgorithmError(f"layout '{name}' splits '{letter.upper()}', which it lacks")
    return parsed
