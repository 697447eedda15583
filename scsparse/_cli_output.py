"""The command line's one-line errors, and what ``scsparse fit`` writes besides its output file: the paths and
keys checked before anything runs, and the figures and ``factors.md`` of ``--figures``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

__all__ = ["FIGURE_NOTES", "FIGURE_REPORT", "PROG", "CLIError", "check_figure_keys", "check_fit_paths", "fit_figures"]

PROG = "scsparse"


class CLIError(Exception):
    """An error to report as one line with exit status 2."""


#: What each figure of ``scsparse fit --figures`` shows (listed in its ``factors.md``).
FIGURE_NOTES = {
    "multistudy_overview.png": "shared and study-specific programmes at a glance",
    "loadings_heatmap.png": "|W| of the top genes of each active factor",
    "factors_umap.png": "activity of each active factor on the UMAP",
    "factor_responses.png": "decoded expression of the genes that change most along each active factor",
}


#: The file ``scsparse fit --figures`` writes besides the figures.
FIGURE_REPORT = "factors.md"


def _check_output_file(path: Path, option: str) -> None:
    """``path`` can be written as a file: it is not a folder, and no part of the way to it is a file."""
    if path.is_dir():
        raise CLIError(f"{option} {str(path)!r} is a folder; give the name of a file, e.g. {str(path / 'out.h5ad')!r}.")
    _check_folder_path(path.parent, option, path)


def _check_folder_path(folder: Path, option: str, named: Path) -> None:
    """``folder`` is a folder or can be created: the nearest part of it that exists is a folder."""
    for part in (folder, *folder.parents):
        if part.exists():
            if not part.is_dir():
                raise CLIError(f"{option} {str(named)!r} cannot be written: {str(part)!r} is a file, not a folder.")
            return


def _figure_keys(key: str) -> dict[str, list[str]]:
    """The keys ``--figures`` adds to the output when the input has no UMAP: the active factors, their own
    neighbour graph and UMAP (the input's ``uns['neighbors']``/``obsp`` graph is left as it is).
    """
    from scsparse.results import factors_key

    graph = f"{key}_neighbors"
    umap = factors_key(key, "umap")
    return {
        "obsm": [factors_key(key, "active"), umap],
        "obsp": [f"{graph}_connectivities", f"{graph}_distances"],
        "uns": [graph, umap],
    }


def _check_figures_folder(folder: Path, overwrite: bool) -> None:
    """``--figures DIR`` can be written: not a file, and without ``--overwrite`` none of its files there yet."""
    if folder.exists() and not folder.is_dir():
        raise CLIError(f"--figures {str(folder)!r} is a file; give a folder (created if needed).")
    _check_folder_path(folder, "--figures", folder)
    if overwrite or not folder.is_dir():
        return
    taken = sorted(name for name in (*FIGURE_NOTES, FIGURE_REPORT) if (folder / name).exists())
    if taken:
        raise CLIError(
            f"--figures {str(folder)!r} already holds {', '.join(taken)}; pass --overwrite to replace them, or give "
            "another folder."
        )


def fit_figures(adata, key: str, folder: Path, seed: int, model=None, groupby: list[str] | None = None) -> list[Path]:
    """Figures of a fit: loadings heatmap, factor UMAP, with the model the traversals of the active factors
    (``factor_responses.png``), for a multi-study fit the shared/specific overview, and ``factors.md``
    (:func:`scsparse.tl.fit_report`: settings, active factors, diagnostics and what each factor is, related to the
    ``groupby`` columns).

    The UMAP is computed when the input has none, on the active factors (the active *shared* factors of a
    multi-study fit, which place every study's cells in one space), stored as ``obsm[f"X_{key}_active"]``, with
    its own neighbour graph and UMAP (:func:`_figure_keys`): the input's neighbour graph stays as it is.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import scanpy as sc

    from scsparse import pl, tl
    from scsparse.results import read_results

    folder.mkdir(parents=True, exist_ok=True)
    res = read_results(adata, key)
    active = res.active_factors
    multistudy = bool(res.studies)
    written = []
    if multistudy:
        written.append(folder / "multistudy_overview.png")
        ax = pl.multistudy_overview(adata, key=key, show=False, save=written[-1])
        plt.close(ax.figure)
    if not active:
        print(
            f"{PROG}: no active factor; no loadings figures written (train longer with --max-epochs).", file=sys.stderr
        )
        return written
    written.append(folder / "loadings_heatmap.png")
    ax = pl.loadings_heatmap(adata, key=key, show=False, save=written[-1])
    plt.close(ax.figure)
    basis = "umap"
    if "X_umap" not in adata.obsm:
        use = [f for f in active if res.cell_masks[f] is None]  # factors defined on every cell (shared ones)
        if not use:
            print(f"{PROG}: no active shared factor; no UMAP drawn.", file=sys.stderr)
            return written
        keys = _figure_keys(key)
        active_key, umap_key = keys["obsm"]
        adata.obsm[active_key] = res.Z[:, [res.factor_names.index(f) for f in use]]
        sc.pp.neighbors(adata, use_rep=active_key, random_state=seed, key_added=keys["uns"][0])
        sc.tl.umap(adata, random_state=seed, neighbors_key=keys["uns"][0], key_added=umap_key)
        basis = umap_key.removeprefix("X_")
    written.append(folder / "factors_umap.png")
    axes = pl.factor_embedding(adata, key=key, basis=basis, show=False, save=written[-1])
    plt.close((axes[0] if isinstance(axes, list) else axes).figure)
    if model is not None:
        written.append(folder / "factor_responses.png")
        axes = pl.factor_response(model.get_factor_response(seed=seed), n_genes=6, show=False, save=written[-1])
        plt.close(axes[0].figure)
    written.append(folder / FIGURE_REPORT)
    tl.fit_report(
        adata,
        key=key,
        groupby=groupby or [],
        files={path.name: FIGURE_NOTES[path.name] for path in written[:-1]},
        path=written[-1],
    )
    return written


def check_fit_paths(args: argparse.Namespace, in_path: Path, out_path: Path) -> None:
    """Every path ``scsparse fit`` writes can be written, before the input is read and the model trained."""
    if out_path.exists() and not args.overwrite:
        raise CLIError(f"output file {str(out_path)!r} exists; pass --overwrite to replace it.")
    same = out_path.resolve() == in_path.resolve()
    if not same and out_path.is_file() and in_path.is_file():  # a hard link is the same file under another name
        same = os.path.samefile(out_path, in_path)
    if same:
        raise CLIError("--out must differ from the input file.")
    _check_output_file(out_path, "--out")
    if args.groupby and not args.figures:
        raise CLIError("--groupby names the obs columns of factors.md, which --figures DIR writes: add --figures.")
    if args.figures:
        _check_figures_folder(Path(args.figures), args.overwrite)


def check_figure_keys(adata, key: str, overwrite: bool) -> None:
    """The keys ``--figures`` would add to the output are free (or ``--overwrite``)."""
    if "X_umap" in adata.obsm or overwrite:
        return
    taken = [f"{attr}[{k!r}]" for attr, names in _figure_keys(key).items() for k in names if k in getattr(adata, attr)]
    if taken:
        raise CLIError(
            f"the input already holds {', '.join(taken)}, which --figures writes (the UMAP of the active factors); "
            "pass --overwrite to replace them, or choose another --key-added."
        )
