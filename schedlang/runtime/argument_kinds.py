"""What a kernel call makes of arrays of the libraries it takes, in their own terms.

A torch tensor that requires grad exports neither DLPack nor ``__cuda_array_interface__``; a
kernel reads it as ``tensor.detach()`` (the same memory, no copy), as torch's own functions read
their inputs. Writing one in place is what torch refuses for a leaf that requires grad, and
what autograd would not see for any other: such an output is refused while grad mode is on,
and written under ``torch.no_grad()``, as an optimizer step writes parameters.

An argument of the wrong dtype gets the conversion of its own library (``.astype`` for numpy,
``.to`` for torch); an output gets none, since the kernel would write a converted copy and the
caller's array would never see the result: it must be allocated with the kernel's dtype.
"""

from __future__ import annotations

import sys

from ..ir import dtype as dt


def _torch_tensor(array: object):
    """`array`'s torch module where it is a torch tensor, else None."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(array, torch.Tensor) else None


def untracked(name: str, array: object, out: bool) -> object:
    """`array` as the kernel may read or write it: a torch tensor that requires grad detached
    (see the module); a ValueError for such an output while grad mode is on."""
    torch = _torch_tensor(array)
    if torch is None or not array.requires_grad:
        return array
    if out and torch.is_grad_enabled():
        raise ValueError(
            f"argument '{name}' is an output that requires grad: the kernel writes it in "
            "place, which autograd does not see (torch refuses in-place writes to such a "
            f"leaf too); allocate it without requires_grad, or write it under "
            f"torch.no_grad(), or pass {name}.detach() (the same memory)"
        )
    return array.detach()


def dtype_error(name: str, wanted: str, got: object, original: object, out: bool) -> TypeError:
    """The error for `original` (as the caller passed it), of dtype `got`, where the
    parameter `name` is of dtype `wanted`; `out`: the kernel writes it."""
    torch = _torch_tensor(original)
    head = f"argument '{name}' must have dtype {wanted}, got {got}"
    if out:
        if torch is not None:
            example = f"torch.empty(shape, dtype=torch.{wanted})"
        else:
            example = f"np.empty(shape, dtype={dt.to_numpy(wanted).name!r})"
        return TypeError(
            f"{head}: it is an output, written in place, so a converted copy would not receive "
            f"the result; allocate it as {wanted}, e.g. {example}"
        )
    if torch is not None:
        return TypeError(f"{head}: convert it with .to(torch.{wanted})")
    return TypeError(f"{head}: convert it with .astype({dt.to_numpy(wanted).name!r})")
