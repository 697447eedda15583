"""Architecture surgery: grow a trained network by new latent factors and train only what is new.

Used to map a query study onto a trained reference model (scArches-style): the reference's weights are copied
into a network with more latent columns, and gradients reach only the new entries.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch import nn

__all__ = ["copy_into_grown_", "restore_gradient_masks_", "train_only_"]


@torch.no_grad()
def copy_into_grown_(target: nn.Module, source_state: Mapping[str, torch.Tensor]) -> None:
    """Copy a smaller network's state into ``target``, whose tensors are as large or larger, in place.

    An entry of the same shape is copied whole. A larger one receives the source in its leading block along
    every dimension that grew (the grown part keeps ``target``'s initial values): new latent columns must
    come after the old ones.

    Parameters
    ----------
    target
        The grown network (its own initialisation fills what the source lacks).
    source_state
        ``state_dict()`` of the smaller network.

    Raises
    ------
    ValueError
        If the two states do not have the same entries, or an entry is smaller in ``target``.

    Examples
    --------
    >>> small, big = nn.Linear(2, 3), nn.Linear(2, 5)
    >>> copy_into_grown_(big, small.state_dict())
    >>> bool(torch.equal(big.weight[:3], small.weight))
    True
    """
    state = target.state_dict()
    missing = sorted(set(state) ^ set(source_state))
    if missing:
        raise ValueError(f"The two networks do not have the same entries: {missing}.")
    for name, dst in state.items():
        src = source_state[name].to(device=dst.device, dtype=dst.dtype)
        if src.dim() != dst.dim() or any(s > d for s, d in zip(src.shape, dst.shape, strict=True)):
            raise ValueError(f"{name}: cannot copy shape {tuple(src.shape)} into {tuple(dst.shape)}.")
        dst[tuple(slice(0, n) for n in src.shape)] = src


def train_only_(module: nn.Module, trainable: Mapping[str, torch.Tensor | None]) -> None:
    """Freeze every parameter of ``module`` but the given ones or entries, in place.

    Parameters not named in ``trainable`` stop requiring gradients. A named parameter keeps training: whole
    (mask ``None``) or with its gradient multiplied by a boolean mask of its shape (``True``: trainable), so
    that its frozen entries get a zero gradient. Under Adam without weight decay a zero gradient leaves an
    entry exactly as it was; with weight decay it would not, so train such a module with ``weight_decay=0``.
    The masks are stored as non-persistent buffers (they follow the module across devices; not saved), the
    mask of parameter ``a.b`` as ``_trainable_a_b``: edit it in place to change what trains.

    Parameters
    ----------
    module
        Network to freeze.
    trainable
        ``{parameter name: boolean mask or None}``, names as given by ``module.named_parameters()``.

    Examples
    --------
    >>> lin = nn.Linear(2, 3)
    >>> train_only_(lin, {"weight": torch.tensor([[True, True], [False, False], [False, False]])})
    >>> lin(torch.ones(1, 2)).sum().backward()
    >>> lin.weight.grad[1:].abs().sum().item(), lin.bias.requires_grad
    (0.0, False)
    """
    params = dict(module.named_parameters())
    masks: dict[str, str] = {}
    unknown = sorted(set(trainable) - set(params))
    if unknown:
        raise ValueError(f"Unknown parameters {unknown}.")
    for name, param in params.items():
        if name not in trainable:
            param.requires_grad_(False)
            continue
        param.requires_grad_(True)
        if trainable[name] is None:
            continue
        mask = torch.as_tensor(trainable[name], dtype=torch.bool, device=param.device)
        if mask.shape != param.shape:
            raise ValueError(f"{name}: mask of shape {tuple(mask.shape)} for a parameter of {tuple(param.shape)}.")
        buffer = f"_trainable_{name.replace('.', '_')}"
        module.register_buffer(buffer, mask.to(param.dtype), persistent=False)
        masks[name] = buffer
    module._gradient_masks = masks
    restore_gradient_masks_(module)


def restore_gradient_masks_(module: nn.Module) -> None:
    """Register again the gradient masks set by :func:`train_only_` (lost when a module is pickled or copied).

    ``copy.deepcopy`` and pickling keep ``requires_grad`` and the mask buffers but drop gradient hooks; a module
    that uses :func:`train_only_` calls this from ``__setstate__``. Does nothing for a module without masks.
    """
    params = dict(module.named_parameters())
    for name, buffer in getattr(module, "_gradient_masks", {}).items():
        params[name].register_hook(_MaskGradient(module, buffer))


class _MaskGradient:
    """Gradient hook multiplying by a mask buffer of ``module`` (a class, not a lambda, so it pickles)."""

    def __init__(self, module: nn.Module, buffer: str) -> None:
        self.module, self.buffer = module, buffer

    def __call__(self, grad: torch.Tensor) -> torch.Tensor:
        return grad * getattr(self.module, self.buffer)
