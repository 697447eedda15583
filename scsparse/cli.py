"""The ``scsparse`` command: ``scsparse demo``, ``scsparse fit`` and ``scsparse bench``.

The CLI is thin: it parses arguments and calls the library (:func:`scsparse._demo.run_demo`,
:func:`scsparse.tl.sparse_vae`, :func:`scsparse.generic.benchmarks.run`). Heavy packages (scvi-tools,
scanpy, torch) are imported inside the handlers, so ``scsparse --help`` is fast. Errors caused by the input
(missing file or layer, non-count data, taken keys, ...) are printed as one line, ``scsparse: error: ...``,
with exit status 2; a fit that kept no factor exits with status 3.
"""

from __future__ import annotations

import argparse
import inspect
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from scsparse._cli_output import (
    PROG,
    CLIError,
    check_figure_keys,
    check_fit_paths,
    fit_figures,
)

__all__ = ["build_parser", "main"]

EXIT_INPUT_ERROR = 2
EXIT_NO_FACTOR = 3


def _fail(message: str, status: int = EXIT_INPUT_ERROR) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return status


def _say(args: argparse.Namespace, message: str) -> None:
    """A progress line on stdout, unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(message, flush=True)


def _input_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that mean "bad input", printed without a traceback."""
    errors: list[type[BaseException]] = [CLIError, FileNotFoundError]
    try:
        from scsparse._checks import InvalidInputError  # light: no scvi import

        errors.append(InvalidInputError)
    except ImportError:  # pragma: no cover
        pass
    return tuple(errors)


# ---------------------------------------------------------------------------------------------------- handlers
def _cmd_demo(args: argparse.Namespace) -> int:
    from scsparse._demo import run_demo

    run_demo(
        out_dir=args.out,
        overwrite=args.overwrite,
        max_epochs=args.max_epochs,
        n_latent=args.n_latent,
        seed=args.seed,
        n_hidden=args.n_hidden,
        lr=args.lr,
    )
    return 0


def _read_h5ad(path: Path):
    import anndata as ad

    if not path.exists():
        raise FileNotFoundError(f"input file {str(path)!r} does not exist.")
    if path.is_dir():
        raise CLIError(f"input {str(path)!r} is a directory; expected an .h5ad file.")
    try:
        return ad.read_h5ad(path)
    except (OSError, KeyError, ValueError, TypeError, AttributeError) as exc:  # not an AnnData, or damaged
        raise CLIError(f"could not read {str(path)!r} as an .h5ad file ({type(exc).__name__}: {exc}).") from exc


def _cmd_fit(args: argparse.Namespace) -> int:
    in_path, out_path = Path(args.input), Path(args.out)
    if args.n_latent_specific is not None and args.study_key is None:
        raise CLIError("--n-latent-specific needs --study-key (the obs column naming each cell's study).")
    check_fit_paths(args, in_path, out_path)
    adata = _read_h5ad(in_path)
    missing = [c for c in args.groupby or [] if c not in adata.obs.columns]
    if missing:  # before training, not after
        raise CLIError(f"--groupby: no column {missing} in the input's obs (columns: {list(adata.obs.columns)}).")
    default_key = "sparsevae" if args.study_key is None else "mssvae"
    if args.figures:
        check_figure_keys(adata, default_key if args.key_added is None else args.key_added, args.overwrite)
    _say(args, f"{PROG} fit: {adata.n_obs} cells x {adata.n_vars} genes from {in_path}")

    from scsparse import tl

    start = time.perf_counter()
    model_kwargs, train_kwargs = _fit_options(args)
    common = {
        "layer": args.layer,
        "batch_key": args.batch_key,
        "gene_likelihood": args.gene_likelihood,
        "max_epochs": args.max_epochs,
        "seed": args.seed,
        "overwrite": args.overwrite,
        "model_kwargs": model_kwargs,
        "train_kwargs": train_kwargs,
    }
    if args.study_key is None:
        key = "sparsevae" if args.key_added is None else args.key_added
        model = tl.sparse_vae(adata, n_latent=args.n_latent, key_added=key, n_restarts=args.restarts, **common)
    else:
        key = "mssvae" if args.key_added is None else args.key_added
        if args.n_latent_specific is not None:
            common["n_latent_specific"] = args.n_latent_specific
        model = tl.multistudy_sparse_vae(
            adata, args.study_key, n_latent_shared=args.n_latent, key_added=key, n_restarts=args.restarts, **common
        )
    uns = adata.uns[key]
    active = [str(f) for f in uns["active_factors"]]
    from scsparse._io import write_h5ad

    figures = fit_figures(adata, key, Path(args.figures), args.seed, model, args.groupby) if args.figures else []
    out_path.parent.mkdir(parents=True, exist_ok=True)
    write_h5ad(adata, out_path)  # whole or not at all: an interrupted write leaves an earlier output as it was
    written = ", ".join(f"{attr}[{name!r}]" for attr, names in model.result_keys(key).items() for name in names)
    _say(
        args,
        f"{PROG} fit: {len(active)} active factor(s) of {len(uns['factor_names'])} in "
        f"{time.perf_counter() - start:.0f} s; wrote {out_path} ({written})"
        + (f" and {len(figures)} figure(s) in {args.figures}" if figures else ""),
    )
    consensus = getattr(model, "consensus_", None)
    if consensus is not None:
        kept = consensus[consensus["kept"]]
        _say(
            args,
            f"{PROG} fit: consensus of {args.restarts} restarts: {len(kept)} of {len(consensus)} groups of programmes "
            f"kept (found by at least half of the restarts) and refitted, {int(kept['identifiable'].sum())} "
            "identifiable; see "
            f"uns[{key!r}]['consensus']",
        )
    if not active:
        return _fail(
            f"no factor was kept: every entry of W went to the spike, so {out_path} holds no programme. Small data "
            "need more optimiser steps or a mask that starts deeper in the slab: try a smaller --batch-size "
            "(e.g. 32), more --max-epochs, or --w-init 1.0 (user guide: Choosing settings, 'How long to train').",
            EXIT_NO_FACTOR,
        )
    return 0


def _fit_options(args: argparse.Namespace) -> tuple[dict, dict]:
    """The model's and ``train()``'s options ``scsparse fit`` was given (those left out keep their defaults)."""
    model_kwargs: dict = {}
    if args.n_hidden is not None:
        model_kwargs["n_hidden"] = args.n_hidden
    if args.w_init is not None:
        model_kwargs["decoder_kwargs"] = {"w_init": args.w_init}
    if args.mask_init is not None:
        model_kwargs["mask_init"] = args.mask_init
    train_kwargs: dict = {"enable_progress_bar": not args.quiet and sys.stdout.isatty()}
    if args.batch_size is not None:
        train_kwargs["batch_size"] = args.batch_size
    if args.lr is not None:
        train_kwargs["lr"] = args.lr
    if args.exact_zeros:
        train_kwargs["exact_zeros"] = True
    return model_kwargs, train_kwargs


def _benchmarks() -> ModuleType:
    """:mod:`scsparse.generic.benchmarks`, loaded when ``scsparse bench`` runs, never on importing the command line."""
    try:
        from scsparse.generic import benchmarks
    except ImportError as exc:
        raise CLIError(f"benchmarks are not available in this installation ({exc}).") from exc
    return benchmarks


def _benchmark_names() -> list[str] | None:
    """The benchmarks ``scsparse bench`` offers; ``None`` when they cannot be loaded (the command then says why)."""
    try:
        return sorted(_benchmarks().BENCHMARKS)
    except CLIError:
        return None


def _cell_counts(text: str | None) -> list[int] | None:
    """``--cells 2000,10000`` as a list of positive integers (``None`` when not given)."""
    if text is None:
        return None
    try:
        counts = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise CLIError(f"--cells takes positive whole numbers separated by commas (e.g. 2000,10000), got {text!r}.")
    return counts


def _cmd_bench(args: argparse.Namespace) -> int:
    benchmarks = _benchmarks()
    names = sorted(getattr(benchmarks, "BENCHMARKS", {}))
    if args.name != "all" and args.name not in names:
        raise CLIError(f"unknown benchmark {args.name!r}; available: all, {', '.join(names) or 'none'}.")
    out = Path(args.out) if args.out else Path("bench_out") / args.name
    options = {
        "rho": args.rho,
        "device": args.device,
        "n_threads": args.n_threads,
        "datasets": args.datasets,
        "methods": args.methods,
        "sections": args.sections,
        "cells": _cell_counts(args.cells),
        "max_prior_cells": args.max_prior_cells,
        "resume": True if args.resume else None,
        "halves": args.halves,
    }
    if args.name == "all":
        try:
            index = benchmarks.run_all(
                out,
                quick=args.quick,
                seeds=args.seeds,
                max_epochs=args.max_epochs,
                skip_missing_data=args.skip_missing_data,
                jobs=args.jobs,
                **options,
            )
        except RuntimeError as exc:
            raise CLIError(str(exc)) from exc
        skipped = [str(r["benchmark"]) for _, r in index.iterrows() if str(r.get("status", "")).startswith("not run")]
        n_run = len(index) - len(skipped)
        print(f"{PROG} bench all: {n_run} benchmark(s) written to {out} (index: {out / 'summary.md'})")
        if skipped:
            print(f"{PROG} bench all: not run, data not available: {', '.join(skipped)}")
        return 0
    if args.skip_missing_data:
        raise CLIError("--skip-missing-data only applies to 'scsparse bench all'.")
    if args.jobs != 1:
        raise CLIError("--jobs only applies to 'scsparse bench all'.")
    fn = benchmarks.BENCHMARKS[args.name]
    for key, value in options.items():
        if value is not None and key not in inspect.signature(fn).parameters:
            raise CLIError(f"benchmark {args.name!r} does not take --{key.replace('_', '-')}.")
    results = benchmarks.run(
        args.name, out=out, seeds=args.seeds, quick=args.quick, max_epochs=args.max_epochs, **options
    )
    print(f"{PROG} bench {args.name}: {len(results)} result row(s) written to {out}")
    return 0


# ---------------------------------------------------------------------------------------------------- parser
def _int_at_least(text: str, minimum: int) -> int:
    what = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from exc
    if value < minimum:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    return _int_at_least(text, 1)


def _prior_cells(text: str) -> int | str:
    return "all" if text.strip().lower() == "all" else _positive_int(text)


def _batch_size(text: str) -> int:
    return _int_at_least(text, 2)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from exc
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _key(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a non-empty key, e.g. sparsevae")
    from scsparse._checks import InvalidInputError, check_key_added  # light: no scvi import

    try:
        return check_key_added(text, argument="--key-added")
    except InvalidInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _specific_factors(text: str) -> int | dict[str, int]:
    """``--n-latent-specific``: one count for every study (``3``) or per study (``stim=3,ctrl=0``)."""
    if "=" not in text:
        return _int_at_least(text, 0)
    counts: dict[str, int] = {}
    for item in text.split(","):
        study, sep, number = item.rpartition("=")
        if not sep or not study or study in counts or not number.isdigit():
            raise argparse.ArgumentTypeError(
                f"expected STUDY=K pairs separated by commas (K >= 0, each study once), got {item!r} in {text!r}"
            )
        counts[study] = int(number)
    return counts


def _add_threads_argument(parser: argparse.ArgumentParser, default_text: str) -> None:
    parser.add_argument(
        "--n-threads",
        type=_positive_int,
        default=None,
        metavar="N",
        help=f"CPU threads for torch (default: {default_text}); 1 or 2 when other processes use the same cores, "
        "where one thread per core can slow training down many times",
    )


def build_parser(bench_choices: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser of the ``scsparse`` command.

    Parameters
    ----------
    bench_choices
        Names accepted by ``scsparse bench`` (``None``: not checked by the parser).

    Returns
    -------
    argparse.ArgumentParser

    Examples
    --------
    >>> build_parser().parse_args(["fit", "in.h5ad", "--out", "out.h5ad"]).n_latent
    20
    """
    from scsparse import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Sparse, identifiable gene programmes for single-cell data (the sparse VAE on scvi-tools).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    from scsparse._demo import DEFAULT_LR, DEFAULT_MAX_EPOCHS, DEFAULT_N_HIDDEN  # stdlib-only at import
    from scsparse._options import DEFAULT_MAX_PRIOR_CELLS, GENE_LIKELIHOODS, MASK_INITS  # stdlib-only

    demo = sub.add_parser(
        "demo",
        help="fit SparseVAE on the embedded Kang PBMC data; write result.h5ad, figures and report.md",
        description="Fit SparseVAE on the embedded Kang et al. (2018) PBMCs (no download) and write "
        "result.h5ad, loadings_heatmap.png, factors_umap.png, umap_celltype_condition.png and report.md.",
    )
    demo.add_argument("--out", default="scsparse_demo", metavar="DIR", help="output folder (default: %(default)s)")
    demo.add_argument("--overwrite", action="store_true", help="replace the demo's files in an existing --out folder")
    demo.add_argument(
        "--max-epochs",
        type=_positive_int,
        default=DEFAULT_MAX_EPOCHS,
        metavar="N",
        help="training epochs (default: %(default)s)",
    )
    demo.add_argument(
        "--n-latent",
        type=_positive_int,
        default=20,
        metavar="K",
        help="number of factors, an upper bound (default: %(default)s)",
    )
    demo.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default: %(default)s)")
    demo.add_argument(
        "--n-hidden",
        type=_positive_int,
        default=DEFAULT_N_HIDDEN,
        metavar="H",
        help="hidden layer width (default: %(default)s; the model's own default is 128, slower)",
    )
    demo.add_argument("--lr", type=float, default=DEFAULT_LR, help="Adam learning rate (default: %(default)s)")
    _add_threads_argument(demo, "one per core")
    demo.set_defaults(handler=_cmd_demo)

    fit = sub.add_parser(
        "fit",
        help="fit SparseVAE (or, with --study-key, MultiStudySparseVAE) on an .h5ad file; write a new .h5ad",
        description="Fit SparseVAE on IN.h5ad and write it with the results to OUT.h5ad: obsm['X_KEY'] "
        "(factors), varm['KEY_W'] (loadings), varm['KEY_pip'] (inclusion probabilities), uns['KEY']. With "
        "--study-key, fit MultiStudySparseVAE (programmes shared by all studies plus each study's own): "
        "obsm['X_KEY_shared'], obsm['X_KEY_specific'], varm['KEY_W_shared'], varm['KEY_pip_shared'], "
        "varm['KEY_W_<study>'], varm['KEY_pip_<study>'], uns['KEY'] (with the factor table).",
    )
    fit.add_argument("input", metavar="IN.h5ad", help="input AnnData")
    fit.add_argument(
        "--out", required=True, metavar="OUT.h5ad", help="output file (not overwritten without --overwrite)"
    )
    fit.add_argument("--layer", default=None, help="layer with the (count) data, e.g. counts (default: adata.X)")
    fit.add_argument("--batch-key", default=None, metavar="KEY", help="obs column with a batch covariate")
    fit.add_argument(
        "--n-latent",
        type=_positive_int,
        default=20,
        metavar="K",
        help="number of factors, an upper bound; with --study-key the number of shared factors (default: %(default)s)",
    )
    fit.add_argument(
        "--study-key",
        default=None,
        metavar="KEY",
        help="obs column naming each cell's study (or condition): fit shared and study-specific programmes",
    )
    fit.add_argument(
        "--n-latent-specific",
        type=_specific_factors,
        default=None,
        metavar="K|STUDY=K,...",
        help="specific factors per study with --study-key: one number for every study, or STUDY=K pairs "
        "separated by commas, studies not named getting none (default: that of "
        "scsparse.tl.multistudy_sparse_vae, 5)",
    )
    fit.add_argument(
        "--gene-likelihood",
        choices=GENE_LIKELIHOODS,
        default="nb",
        help="observation model (default: %(default)s; 'normal' for normalised data)",
    )
    fit.add_argument(
        "--max-epochs",
        type=_positive_int,
        default=None,
        metavar="N",
        help="training epochs (default: scvi-tools' heuristic, up to 400)",
    )
    fit.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default: %(default)s)")
    fit.add_argument(
        "--restarts",
        type=_positive_int,
        default=1,
        metavar="R",
        help="fit R restarts (seeds S, S+1, ...), pool their programmes, keep those at least half of them find and "
        "refit one model on them, with each programme's reproducibility in uns['KEY']['consensus'] "
        "(SparseVAE.consensus; the cost of R + 1 fits; with --study-key the shared and study blocks are grouped "
        "apart; default: %(default)s, a single fit)",
    )
    fit.add_argument(
        "--batch-size",
        type=_batch_size,
        default=None,
        metavar="B",
        help="cells per minibatch (default: 128); smaller batches give small data sets more optimiser steps",
    )
    fit.add_argument(
        "--lr", type=_positive_float, default=None, metavar="LR", help="Adam learning rate (default: 1e-2)"
    )
    fit.add_argument(
        "--n-hidden",
        type=_positive_int,
        default=None,
        metavar="H",
        help="width of the encoder's and decoder's hidden layers (default: 128)",
    )
    fit.add_argument(
        "--w-init",
        type=_positive_float,
        default=None,
        metavar="W",
        help="initial value of the mask W (default: the decoder's); 1.0 starts it deeper in the slab, so fewer "
        "entries go to the spike early: the rescue when a small data set keeps no factor",
    )
    fit.add_argument(
        "--mask-init",
        choices=MASK_INITS,
        default=None,
        help="how W starts: 'constant' (default) or 'nmf', from an NMF of the normalised counts",
    )
    fit.add_argument(
        "--exact-zeros",
        action="store_true",
        help="train W with exact zeros and compute the decoder on its nonzero entries only (train(exact_zeros=True)): "
        "the same programmes, faster once the mask is sparse",
    )
    fit.add_argument(
        "--quiet",
        action="store_true",
        help="no progress lines and no progress bar on stdout (warnings and errors still go to stderr); the bar "
        "is also off when stdout is not a terminal",
    )
    fit.add_argument(
        "--key-added",
        type=_key,
        default=None,
        metavar="KEY",
        help="prefix of the keys (default: sparsevae, or mssvae with --study-key)",
    )
    fit.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing OUT file, existing results under --key-added and the figures' files in an existing "
        "--figures DIR",
    )
    fit.add_argument(
        "--figures",
        default=None,
        metavar="DIR",
        help="also write loadings_heatmap.png, factors_umap.png, factor_responses.png (the genes that change "
        "most along each active factor) and factors.md (what each active factor is) into DIR (computes a UMAP on "
        "the active factors when the input has none)",
    )
    fit.add_argument(
        "--groupby",
        nargs="+",
        default=None,
        metavar="COL",
        help="with --figures: obs columns that factors.md relates each factor to (groups where it is highest "
        "and lowest, Cohen's d, adjusted p)",
    )
    _add_threads_argument(fit, "one per core")
    fit.set_defaults(handler=_cmd_fit)

    bench = sub.add_parser(
        "bench",
        help="run a benchmark on simulated or real data (see scsparse.generic.benchmarks)",
        description="Run a benchmark and write results.csv, summary.md and figures into --out.",
    )
    bench_name = {"choices": ["all", *bench_choices]} if bench_choices else {}
    bench.add_argument(
        "name",
        metavar="NAME",
        help="benchmark name, or 'all' for every benchmark into DIR/NAME"
        + (f" ({', '.join(bench_choices)})" if bench_choices else ""),
        **bench_name,
    )
    bench.add_argument(
        "--rho",
        type=float,
        nargs="+",
        default=None,
        metavar="R",
        help="factor correlation(s), for benchmarks that take them",
    )
    bench.add_argument(
        "--seeds", type=_positive_int, default=None, metavar="N", help="number of seeds (default: the benchmark's)"
    )
    bench.add_argument(
        "--device",
        default=None,
        metavar="DEV",
        help="torch device for benchmarks that take one (speed): cpu, cuda, cuda:1 (default: cpu)",
    )
    bench.add_argument(
        "--datasets",
        default=None,
        metavar="A,B",
        help="data sets to run, comma-separated, for benchmarks that take them (peers, stability, speed's time to "
        "fit; default: all, for stability the single-study ones)",
    )
    bench.add_argument(
        "--methods",
        default=None,
        metavar="A,B",
        help="methods (peers), variants (stability) or scenarios (programme_size) to run, comma-separated "
        "(default: all; for peers all but 'SparseVAE (restarts)')",
    )
    bench.add_argument(
        "--sections",
        default=None,
        metavar="A,B",
        help="sections to run, comma-separated, for benchmarks that have them (speed: epoch, flops, sparsity, "
        "settled, scale, time_to_fit, consensus; default: all but consensus; stability: seeds, halves; default: "
        "both)",
    )
    bench.add_argument(
        "--cells",
        default=None,
        metavar="N,N",
        help="numbers of cells, comma-separated, for benchmarks that take them (programme_size; default: theirs)",
    )
    bench.add_argument(
        "--max-prior-cells",
        type=_prior_cells,
        default=None,
        metavar="N|all",
        help="the most training cells the prior on W is weighed against, for benchmarks that take it "
        f"(programme_size; default: the model's, {DEFAULT_MAX_PRIOR_CELLS}); 'all': every training cell",
    )
    bench.add_argument(
        "--resume",
        action="store_true",
        help="keep the fits an earlier run into --out finished and fit only the missing ones, for benchmarks that "
        "take it (peers, stability)",
    )
    bench.add_argument(
        "--halves",
        type=lambda text: _int_at_least(text, 0),
        default=None,
        metavar="N",
        help="random halvings of the cells for the resampling reading, for benchmarks that take it (stability; "
        "default: 1, quick: 0)",
    )
    bench.add_argument("--out", default=None, metavar="DIR", help="output folder (default: bench_out/NAME)")
    bench.add_argument("--quick", action="store_true", help="a short smoke run")
    bench.add_argument(
        "--skip-missing-data",
        action="store_true",
        help="with 'all': record a benchmark whose data is not in the local cache as 'not run' instead of failing",
    )
    bench.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        metavar="N",
        help="with 'all': run N benchmarks side by side, each in its own process (default: 1); their timings are "
        "then not records",
    )
    bench.add_argument(
        "--max-epochs", type=_positive_int, default=None, metavar="N", help="training epochs (default: the benchmark's)"
    )
    _add_threads_argument(bench, "1")
    bench.set_defaults(handler=_cmd_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``scsparse`` command.

    Parameters
    ----------
    argv
        Arguments without the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        Exit status: 0 on success, 2 for bad input (printed as ``scsparse: error: ...``), 3 when ``scsparse fit``
        kept no factor (the output file is written, and the message says how to rescue the fit). Usage errors
        exit through :class:`SystemExit` with status 2, as argparse does.

    Examples
    --------
    >>> main(["fit", "data.h5ad", "--layer", "counts", "--out", "result.h5ad", "--max-epochs", "100"])  # doctest: +SKIP
    0
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    # the benchmark registry imports torch: only load it when the bench command is used
    bench_choices = _benchmark_names() if next((a for a in argv if not a.startswith("-")), None) == "bench" else None
    args = build_parser(bench_choices).parse_args(argv)
    previous = _exit_on_sigterm()
    try:
        if args.command == "bench":  # benchmarks set their own threads (their n_threads option)
            return int(args.handler(args) or 0)
        from scsparse._threads import torch_threads

        with torch_threads(args.n_threads):
            return int(args.handler(args) or 0)
    except _input_errors() as exc:
        return _fail(str(exc))
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _exit_on_sigterm():
    """Make SIGTERM (a scheduler's stop) exit through Python, as Ctrl+C does, so that a file being written is
    removed rather than left half-written beside its target; returns the previous handler (``None`` when it cannot
    be set, outside the main thread).
    """

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread
        return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
