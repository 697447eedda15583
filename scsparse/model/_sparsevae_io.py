"""Saving and loading :class:`~scsparse.model.SparseVAE` (each file whole; the genes checked on load)."""

from __future__ import annotations

import os
import pickle
import shutil
import traceback
import warnings
from pathlib import Path
from typing import Any

import torch
from anndata import AnnData

from scsparse._checks import InvalidInputError
from scsparse._io import atomic_path, temporary_name
from scsparse.train import without_log_lines

from ._base import unseen_categories

#: What torch raises on a saved model it cannot read (a truncated or otherwise damaged file).
_UNREADABLE = (OSError, EOFError, RuntimeError, pickle.UnpicklingError)


def _damaged(path: str, exc: BaseException) -> InvalidInputError:
    return InvalidInputError(
        f"{path} cannot be read as a saved model ({type(exc).__name__}: {exc}); the file is damaged or incomplete "
        "(e.g. a copy or a save that was interrupted). Save the model again, or copy the folder anew."
    )


def _raised_reading(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while torch read a file (not later, e.g. by ``load_state_dict``)."""
    return any(frame.f_code is torch.serialization.load.__code__ for frame, _ in traceback.walk_tb(exc.__traceback__))


class SaveLoadMixin:
    """``save`` and ``load``: each file written whole or not at all; ``load`` checks the AnnData's genes."""

    def save(
        self,
        dir_path: str,
        prefix: str | None = None,
        overwrite: bool = False,
        save_anndata: bool = False,
        save_kwargs: dict | None = None,
        legacy_mudata_format: bool = False,
        datamodule: Any = None,
        **anndata_write_kwargs: Any,
    ) -> None:
        """Save the model (:meth:`scvi.model.base.BaseModelClass.save`), each file whole or not at all.

        The files are written into a temporary folder beside ``dir_path`` and then moved into it one by one, so an
        interrupted save (Ctrl+C, a full disk) leaves an earlier ``model.pt`` as it was, never a truncated one.
        Other files in ``dir_path`` are kept.

        Examples
        --------
        >>> model.save("my_model/", overwrite=True)
        """
        target = Path(dir_path)
        if target.exists() and not overwrite:  # scvi-tools' own message
            return super().save(dir_path, prefix=prefix, overwrite=False)
        staging = temporary_name(target)
        try:
            super().save(
                str(staging), prefix=prefix, overwrite=False, save_anndata=save_anndata, save_kwargs=save_kwargs,
                legacy_mudata_format=legacy_mudata_format, datamodule=datamodule, **anndata_write_kwargs,
            )  # fmt: skip
            target.mkdir(parents=True, exist_ok=True)
            for path in sorted(staging.iterdir()):
                with atomic_path(target / path.name) as tmp:
                    os.replace(path, tmp)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    @classmethod
    def load(
        cls,
        dir_path: str,
        adata: AnnData | None = None,
        accelerator: str = "auto",
        device: int | str = "auto",
        prefix: str | None = None,
        backup_url: str | None = None,
        datamodule: Any = None,
        allowed_classes_names_list: list[str] | None = None,
    ):
        """Load a saved model (:meth:`scvi.model.base.BaseModelClass.load`); ``adata`` must have the genes the
        model was trained on, in the same order (checked here, with a clear error).

        Examples
        --------
        >>> model.save("my_model/")
        >>> model = scsparse.model.SparseVAE.load("my_model/", adata=adata)
        """
        # the genes are checked against the registry when scvi-tools sets ``adata`` up (check_saved_genes), so
        # model.pt is read once, by scvi-tools; a file torch cannot read is named as damaged
        path = os.path.join(dir_path, f"{prefix or ''}model.pt")
        # "File ... already downloaded": a local folder; scvi-tools' warning on other genes precedes the error
        with (
            without_log_lines("scvi.data._download", "File "),
            unseen_categories(cls.__name__),
            warnings.catch_warnings(),
        ):
            warnings.filterwarnings("ignore", message="`var_names` for the loaded `model` does not match")
            try:
                return super().load(
                    dir_path, adata=adata, accelerator=accelerator, device=device, prefix=prefix,
                    backup_url=backup_url, datamodule=datamodule, allowed_classes_names_list=allowed_classes_names_list,
                )  # fmt: skip
            except _UNREADABLE as exc:
                if _raised_reading(exc):
                    raise _damaged(path, exc) from exc
                raise
