"""What a benchmark run writes, and how it says where it came from.

The output folder and ``results.csv`` (:func:`make_output_dir`, :func:`write_results`); the provenance
(:func:`provenance`, the options of :func:`run_options`) and the opening of ``summary.md``
(:func:`summary_head`); the "met / not met" words of its targets (:func:`target_verdict`,
:func:`count_verdict`); the file itself (:func:`write_summary`); figures (:func:`new_figure`,
:func:`save_figure`); the end of a run (:func:`wrote_line`, :func:`finish_run`). The benchmarks import this
module as ``report``; the tables of a summary are :mod:`._tables`'s (``markdown_table``). This module imports
no other module of the benchmarks.
"""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from scsparse import utils
from scsparse.utils import package_versions

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "NOT_ASSESSED_QUICK",
    "count_verdict",
    "finish_run",
    "machine_info",
    "make_output_dir",
    "new_figure",
    "package_versions",
    "provenance",
    "provenance_markdown",
    "reference_seconds",
    "run_options",
    "save_figure",
    "summary_head",
    "target_verdict",
    "write_results",
    "write_summary",
    "wrote_line",
]


def make_output_dir(out: str | os.PathLike[str]) -> Path:
    """Create the output folder (and its parents) if needed.

    Parameters
    ----------
    out
        Folder that receives ``results.csv``, ``summary.md`` and the figures.

    Returns
    -------
    pathlib.Path
        The folder, resolved to an absolute path.
    """
    path = Path(out).expanduser().resolve()
    if path.exists() and not path.is_dir():
        raise ValueError(f"out={str(out)!r} exists and is not a folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def write_results(df: pd.DataFrame, out_dir: Path, columns: Sequence[str], name: str = "results.csv") -> Path:
    """Write the per-run results with exactly the given columns, in that order.

    Parameters
    ----------
    df
        One row per method, setting and seed.
    out_dir
        Output folder (see :func:`make_output_dir`).
    columns
        The columns to write; every one must be in ``df``.
    name
        File name inside ``out_dir``.

    Returns
    -------
    pathlib.Path
        Path of the written CSV file.
    """
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"results lack the columns {missing}")
    path = out_dir / name
    utils.write_csv(df.loc[:, list(columns)], path, index=False)
    return path


def _git(root: Path, *args: str) -> str | None:
    """Stripped stdout of a read-only ``git -C root ARGS`` (``None`` when git cannot run)."""
    try:
        res = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip()


def _git_commit() -> str:
    """The source tree's commit (read-only ``git``), ``+dirty`` when tracked files differ from it, or ``"unknown"``."""
    root = Path(__file__).resolve().parents[3]
    commit = _git(root, "rev-parse", "--short", "HEAD")
    if not commit:
        return "unknown"
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return f"{commit}+dirty" if status else commit


def machine_info() -> dict[str, Any]:
    """CPU count, torch threads, compute device and platform of the machine running the benchmark."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import torch

        info["torch_threads"] = torch.get_num_threads()
        if torch.cuda.is_available():
            info["device"] = f"cuda ({torch.cuda.get_device_name(0)})"
        elif getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
            info["device"] = "mps"
        else:
            info["device"] = "cpu"
    except ImportError:  # pragma: no cover - torch is a dependency
        info["torch_threads"] = "n/a"
        info["device"] = "cpu"
    return info


def reference_seconds(repeats: int = 5) -> float:
    """Seconds a fixed workload takes on this CPU now: the median of ``repeats`` timings of 20 products of two
    512 x 512 float32 matrices in torch, on torch's current threads.

    Fits timed on different machines, or beside other work, are set side by side through it: a row's seconds
    divided by its reference seconds is a cost in units of the workload, which the CPU's speed cancels from (as far
    as the fit's mix of arithmetic and memory traffic is the workload's).

    Examples
    --------
    >>> 0 < reference_seconds(repeats=1) < 60
    True
    """
    import torch

    gen = torch.Generator().manual_seed(0)
    a, b = torch.rand(512, 512, generator=gen), torch.rand(512, 512, generator=gen)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(20):
            torch.mm(a, b)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def provenance(benchmark: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Everything needed to tell where a benchmark result came from.

    Parameters
    ----------
    benchmark
        Benchmark name.
    options
        The options the benchmark was run with (as passed by the caller, after defaults).

    Returns
    -------
    dict
        ``benchmark``, ``date`` (UTC, ISO 8601), ``command`` (interpreter and ``sys.argv``), ``options``,
        ``git_commit``, ``machine`` (:func:`machine_info`) and ``versions`` (:func:`package_versions`).
    """
    return {
        "benchmark": benchmark,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": " ".join([sys.executable, *sys.argv]),
        "options": dict(options),
        "git_commit": _git_commit(),
        "machine": machine_info(),
        "versions": package_versions(),
    }


def provenance_markdown(prov: Mapping[str, Any]) -> str:
    """Render :func:`provenance` as a short markdown block (for the top of ``summary.md``)."""
    opts = ", ".join(f"`{k}={v!r}`" for k, v in prov["options"].items())
    m = prov["machine"]
    vers = ", ".join(f"{k} {v}" for k, v in prov["versions"].items())
    return "\n".join(
        [
            f"- benchmark: `{prov['benchmark']}`; date (UTC): {prov['date']}; commit: `{prov['git_commit']}`",
            f"- options: {opts}",
            f"- command: `{prov['command']}`",
            f"- machine: {m['cpu_count']} CPUs, {m['torch_threads']} torch threads, device {m['device']}; "
            f"{m['platform']}",
            f"- versions: {vers}",
        ]
    )


def run_options(
    out_dir: Path | None,
    seeds: Any,
    quick: bool,
    max_epochs: int | None,
    *,
    config: Mapping[str, Any] | None = None,
    **more: Any,
) -> dict[str, Any]:
    """The options a benchmark records in its provenance, in the order every benchmark gives them.

    ``out`` (left out when ``out_dir`` is ``None``), ``seeds``, ``quick``, ``max_epochs``, then ``more`` in the
    order given, then every setting of ``config`` sorted by name (one given before, such as ``max_epochs``,
    keeps its place and takes the setting's value).

    Examples
    --------
    >>> run_options(None, 3, 0, None, epochs_used=2)
    {'seeds': 3, 'quick': False, 'max_epochs': None, 'epochs_used': 2}
    >>> run_options(None, 3, True, None, config={"lr": 0.1, "max_epochs": 2})
    {'seeds': 3, 'quick': True, 'max_epochs': 2, 'lr': 0.1}
    """
    head = {} if out_dir is None else {"out": str(out_dir)}
    options = {**head, "seeds": seeds, "quick": bool(quick), "max_epochs": max_epochs, **more}
    return {**options, **{k: config[k] for k in sorted(config or {})}}


def summary_head(
    title: str,
    prov: Mapping[str, Any],
    *,
    section: bool = True,
    total_seconds: float | None = None,
    mode: str | None = None,
) -> list[str]:
    """The opening lines of a ``summary.md``: ``title``, then the provenance block, then a blank line.

    Parameters
    ----------
    title
        The heading line (``"# ..."``).
    prov
        :func:`provenance` of the run.
    section
        Put the provenance under a ``## Provenance`` heading (``False``: right below the title).
    total_seconds, mode
        Add a ``- total wall-clock: M min (mode)`` line below the provenance.
    """
    lines = [title, ""]
    if section:
        lines += ["## Provenance", ""]
    lines.append(provenance_markdown(prov))
    if total_seconds is not None:
        lines.append(f"- total wall-clock: {total_seconds / 60:.1f} min ({mode})")
    return [*lines, ""]


#: What :func:`target_verdict` says of a target in a quick smoke run.
NOT_ASSESSED_QUICK = "not assessed (quick smoke run)"


def target_verdict(ok: bool, *, assessed: bool = True, unassessed: str = "not assessed") -> str:
    """``"met"`` or ``"not met"`` for a target, or ``unassessed`` when the run cannot assess it.

    Examples
    --------
    >>> target_verdict(True), target_verdict(False)
    ('met', 'not met')
    >>> target_verdict(True, assessed=False, unassessed=NOT_ASSESSED_QUICK)
    'not assessed (quick smoke run)'
    """
    if not assessed:
        return unassessed
    return "met" if ok else "not met"


def count_verdict(n_ok: int, n: int, *, counts: bool = False) -> str:
    """``"met"`` when all ``n`` runs meet a target, ``"not met"`` when none does, else ``"partly met"``.

    With ``counts``, the partial verdict says how many seeds met it: ``"partly met (n_ok/n seeds)"``.

    Examples
    --------
    >>> count_verdict(3, 3), count_verdict(0, 3), count_verdict(1, 3, counts=True)
    ('met', 'not met', 'partly met (1/3 seeds)')
    """
    if n_ok == n:
        return "met"
    if n_ok == 0:
        return "not met"
    return f"partly met ({n_ok}/{n} seeds)" if counts else "partly met"


def write_summary(out_dir: Path, lines: Sequence[str], name: str = "summary.md") -> Path:
    """Write ``lines`` to ``out_dir / name``, one per line, ending with a newline; return the path."""
    text = "\n".join(lines)
    path = out_dir / name
    utils.write_text(path, text if text.endswith("\n") else text + "\n")
    return path


def new_figure(figsize: tuple[float, float], *, layout: str | None = "constrained") -> Figure:
    """A matplotlib figure with an Agg canvas, outside pyplot (nothing to close, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig: Figure, path: Path, dpi: int = 110) -> Path:
    """Save ``fig`` (from :func:`new_figure`) as ``path`` at ``dpi``, whole or not at all; return the path."""
    return utils.save_figure(fig, path, dpi=dpi)


def wrote_line(
    name: str, files: Sequence[str | os.PathLike[str]], *, out_dir: Path | None = None, seconds: float | None = None
) -> str:
    """The line a benchmark prints at its end: ``"[name] done in M min; wrote a, b to out_dir"``.

    The ``done in`` part needs ``seconds``, the ``to`` part ``out_dir``.

    Examples
    --------
    >>> wrote_line("bars", ["results.csv", "summary.md"], out_dir=Path("out"), seconds=90)
    '[bars] done in 1.5 min; wrote results.csv, summary.md to out'
    """
    done = "" if seconds is None else f" done in {seconds / 60:.1f} min;"
    where = "" if out_dir is None else f" to {out_dir}"
    return f"[{name}]{done} wrote {', '.join(str(f) for f in files)}{where}"


def finish_run(df: pd.DataFrame, out_dir: Path, *messages: str, verbose: bool) -> pd.DataFrame:
    """End a benchmark: print ``messages`` when ``verbose``, record ``out_dir`` in ``df.attrs``, return ``df``."""
    if verbose:
        for message in messages:
            print(message, flush=True)
    df.attrs["out_dir"] = str(out_dir)
    return df
