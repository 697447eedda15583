"""Gene-set libraries: GMT files (plain, gzipped or zipped), dicts, registry names, PanglaoDB and CellMarker tables.

Every reader returns a plain ``dict`` mapping a set name to a list of gene symbols (in the file's case). Symbol
matching against the data is case-insensitive elsewhere (:func:`scsparse.tl.enrich`), so mouse sets written in
upper case (GO2MSIG, PanglaoDB) match mouse data.
"""

from __future__ import annotations

import gzip
import io
import re
import zipfile
from collections.abc import Iterable, Mapping
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Literal

import pandas as pd

__all__ = [
    "GENE_SET_LIBRARIES",
    "GeneSetError",
    "load_gene_sets",
    "read_cellmarker",
    "read_gmt",
    "read_panglaodb",
    "short_term",
]

GeneSets = dict[str, list[str]]


class GeneSetError(ValueError):
    """A gene-set library cannot be read or does not fit the data; the message says what to change."""


#: Gene-set libraries known by name: name -> (registry dataset, registry file path, format, options).
#: ``panglaodb_human``/``panglaodb_mouse`` keep the markers PanglaoDB lists for that species.
GENE_SET_LIBRARIES: dict[str, tuple[str, str, str, dict]] = {
    "hallmark_human": ("hallmark_human", "genesets/human_hallmark_v2025.gmt", "gmt", {}),
    "hallmark_mouse": ("hallmark_mouse", "genesets/mouse_hallmark_v2025.gmt", "gmt", {}),
    "hallmark_v7": ("hallmark_v7", "genesets/h.all.v7.0.symbols.gmt", "gmt", {}),
    "go_bp_human": ("go_bp_human", "genesets/enrichr.GO_Biological_Process_2021.gmt", "gmt", {}),
    "go_bp_mouse": (
        "go_bp_mouse",
        "genesets/Mus_musculus_GSEA_GO_sets_bp_symbols_highquality_April_2015.gmt.zip",
        "gmt",
        {},
    ),
    "panglaodb": ("panglaodb", "genesets/PanglaoDB_markers_27_Mar_2020.tsv", "panglaodb", {"species": None}),
    "panglaodb_human": ("panglaodb", "genesets/PanglaoDB_markers_27_Mar_2020.tsv", "panglaodb", {"species": "human"}),
    "panglaodb_mouse": ("panglaodb", "genesets/PanglaoDB_markers_27_Mar_2020.tsv", "panglaodb", {"species": "mouse"}),
    "cellmarker_mouse": ("cellmarker_mouse", "genesets/CellMarker2_Mouse.csv", "cellmarker", {}),
}

#: Libraries shipped inside the package (used when the registry file is not in ``SCSPARSE_DATA_DIR``).
_PACKAGED = {"hallmark_human": "genesets/human_hallmark_v2025.gmt"}

_ALIASES = {"hallmark": "hallmark_human", "h": "hallmark_human", "mh": "hallmark_mouse"}


# ----------------------------------------------------------------------------------------------- file readers
def _open_text(path: Path) -> str:
    """The text of a plain, ``.gz`` or ``.zip`` (one member) file."""
    name = path.name.lower()
    if name.endswith(".zip"):
        with zipfile.ZipFile(path) as zf:
            members = [m for m in zf.namelist() if not m.endswith("/") and not m.startswith("__MACOSX")]
            if len(members) != 1:
                raise GeneSetError(f"{path}: expected a zip archive with one file, found {members}.")
            return zf.read(members[0]).decode("utf-8", errors="replace")
    if name.endswith(".gz"):
        with gzip.open(path, "rb") as fh:
            return fh.read().decode("utf-8", errors="replace")
    return path.read_text(encoding="utf-8", errors="replace")


def _parse_gmt_text(text: str, source: str) -> GeneSets:
    out: GeneSets = {}
    for lineno, raw in enumerate(io.StringIO(text), start=1):
        line = raw.rstrip("\r\n")
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        name = fields[0].strip()
        genes = [g.strip() for g in fields[2:] if g.strip()]
        if len(fields) < 3 or not name or not genes:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise GeneSetError(
                f"{source}, line {lineno}: not a GMT record. Each line must be tab-separated: set name, description "
                f"(may be empty), then at least one gene; found {len(fields)} tab-separated field(s): {shown!r}."
            )
        out.setdefault(name, [])
        seen = set(out[name])
        out[name] += [g for g in genes if not (g in seen or seen.add(g))]
    if not out:
        raise GeneSetError(f"{source}: no gene set found (empty GMT file).")
    return out


def read_gmt(path: str | PathLike[str]) -> GeneSets:
    """Read a GMT file (plain, ``.gz`` or a ``.zip`` holding one GMT).

    Each line is ``name<TAB>description<TAB>gene<TAB>gene...``; the description may be empty (Enrichr files) or a
    URL (MSigDB). Empty lines and lines starting with ``#`` are skipped; a set listed twice is merged.

    Parameters
    ----------
    path
        The file.

    Returns
    -------
    dict
        Set name -> list of genes (file order, duplicates removed).

    Raises
    ------
    GeneSetError
        A line without a name, a description field and at least one gene (the message gives the line number).

    Examples
    --------
    >>> sets = read_gmt("h.all.v2025.1.Hs.symbols.gmt")  # doctest: +SKIP
    >>> len(sets["HALLMARK_INTERFERON_ALPHA_RESPONSE"])  # doctest: +SKIP
    97
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"Gene-set file {str(path)!r} not found.")
    return _parse_gmt_text(_open_text(path), str(path))


def _species_filter(species: str | None) -> str | None:
    if species is None:
        return None
    key = str(species).strip().lower()
    if key in ("human", "hs", "homo sapiens", "homo_sapiens"):
        return "Hs"
    if key in ("mouse", "mm", "mus musculus", "mus_musculus"):
        return "Mm"
    raise GeneSetError(f"species must be 'human', 'mouse' or None, got {species!r}.")


def read_panglaodb(
    path: str | PathLike[str],
    *,
    species: Literal["human", "mouse"] | None = None,
    canonical_only: bool = False,
    organ: str | Iterable[str] | None = None,
) -> GeneSets:
    """Cell-type marker sets from the PanglaoDB marker table (``PanglaoDB_markers_27_Mar_2020.tsv``).

    Parameters
    ----------
    path
        The TSV (columns ``species``, ``official gene symbol``, ``cell type``, ``canonical marker``, ``organ``, ...).
    species
        ``"human"`` keeps markers whose ``species`` contains ``Hs``, ``"mouse"`` those with ``Mm``; ``None`` keeps
        all. Symbols are upper case (human style) for both species: match them case-insensitively.
    canonical_only
        Keep only the markers flagged ``canonical marker == 1``.
    organ
        Keep only cell types of this organ (or these organs), e.g. ``"Immune system"`` or ``"Brain"``.

    Returns
    -------
    dict
        Cell type -> marker genes.

    Examples
    --------
    >>> sets = read_panglaodb(path, species="mouse", organ="Brain")  # doctest: +SKIP
    >>> sets["Oligodendrocytes"][:3]  # doctest: +SKIP
    """
    table = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    needed = {"species", "official gene symbol", "cell type"}
    if not needed <= set(table.columns):
        raise GeneSetError(
            f"{path}: not a PanglaoDB marker table (columns {sorted(needed - set(table.columns))} missing)."
        )
    code = _species_filter(species)
    if code is not None:
        table = table[table["species"].str.contains(code, regex=False)]
    if canonical_only and "canonical marker" in table:
        table = table[table["canonical marker"].str.strip().isin(["1", "1.0"])]
    if organ is not None:
        organs = {organ} if isinstance(organ, str) else set(organ)
        table = table[table["organ"].isin(organs)]
    table = table[(table["official gene symbol"].str.strip() != "") & (table["cell type"].str.strip() != "")]
    out: GeneSets = {}
    for ct, genes in table.groupby("cell type", sort=True)["official gene symbol"]:
        out[str(ct)] = list(dict.fromkeys(g.strip() for g in genes))
    if not out:
        raise GeneSetError(f"{path}: no marker left after the filters (species={species!r}, organ={organ!r}).")
    return out


def read_cellmarker(
    path: str | PathLike[str], *, tissue: str | Iterable[str] | None = None, by_tissue: bool = False
) -> GeneSets:
    """Cell-type marker sets from a CellMarker 2.0 table with columns ``Tissue``, ``CT``, ``Gene``.

    ``Gene`` holds comma-separated symbols. Sets are the union over tissues per cell type, or one set per
    ``"cell type (tissue)"`` with ``by_tissue=True``.

    Parameters
    ----------
    path
        The CSV (e.g. ``CellMarker2_Mouse.csv``).
    tissue
        Keep only rows of this tissue (or these tissues).
    by_tissue
        One set per cell type and tissue.

    Returns
    -------
    dict
        Cell type -> marker genes.
    """
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    if not {"Tissue", "CT", "Gene"} <= set(table.columns):
        raise GeneSetError(f"{path}: not a CellMarker table (needs columns Tissue, CT, Gene; has {list(table)}).")
    if tissue is not None:
        tissues = {tissue} if isinstance(tissue, str) else set(tissue)
        table = table[table["Tissue"].isin(tissues)]
    out: GeneSets = {}
    for _, row in table.iterrows():
        name = f"{row['CT']} ({row['Tissue']})" if by_tissue else str(row["CT"])
        genes = [g.strip() for g in re.split(r"[,;]", row["Gene"]) if g.strip()]
        if genes and name.strip():
            out.setdefault(name, [])
            out[name] = list(dict.fromkeys(out[name] + genes))
    if not out:
        raise GeneSetError(f"{path}: no marker left (tissue={tissue!r}).")
    return out


# ------------------------------------------------------------------------------------------------ resolution
def _read_file(path: Path, fmt: str | None = None, **options) -> GeneSets:
    name = path.name.lower()
    if fmt is None:
        if name.endswith((".gmt", ".gmt.gz", ".gmt.zip", ".zip", ".gz")):
            fmt = "gmt"
        elif name.endswith((".tsv", ".tsv.gz", ".txt")):
            header = _open_text(path).split("\n", 1)[0]
            fmt = "panglaodb" if "official gene symbol" in header else "gmt"
        elif name.endswith((".csv", ".csv.gz")):
            fmt = "cellmarker"
        else:
            fmt = "gmt"
    if fmt == "gmt":
        return read_gmt(path)
    if fmt == "panglaodb":
        return read_panglaodb(path, **options)
    if fmt == "cellmarker":
        return read_cellmarker(path, **options)
    raise GeneSetError(f"Unknown gene-set file format {fmt!r}.")  # pragma: no cover


def _read_library(name: str, species: str | None) -> GeneSets:
    """Read a named library: the registry copy in ``SCSPARSE_DATA_DIR`` when present, else a packaged copy."""
    from ._registry import DataNotAvailableError, data_dir, fetch

    dataset, rel, fmt, options = GENE_SET_LIBRARIES[name]
    options = dict(options)
    if fmt == "panglaodb" and species is not None:
        options["species"] = species
    packaged = _PACKAGED.get(name)
    if packaged is not None and not (data_dir() / rel).is_file():
        ref = resources.files("scsparse.data").joinpath(packaged)
        with resources.as_file(ref) as path:  # a real file, also for a zipped install
            return _read_file(Path(path), fmt, **options)
    try:
        path = fetch(dataset, files=[rel])[rel]
    except DataNotAvailableError as exc:
        raise GeneSetError(f"Gene-set library {name!r} (registry dataset {dataset!r}) is not available: {exc}") from exc
    return _read_file(path, fmt, **options)


def library_name(gene_sets: object) -> str:
    """A short label of a gene-set argument: the library name, the file name, or ``"custom"`` for a dict."""
    if isinstance(gene_sets, Mapping):
        return "custom"
    text = str(gene_sets)
    key = _ALIASES.get(text.strip().lower(), text.strip().lower())
    if key in GENE_SET_LIBRARIES:
        return key
    return Path(text).name


def load_gene_sets(
    gene_sets: str | PathLike[str] | Mapping[str, Iterable[str]],
    *,
    species: Literal["human", "mouse"] | None = None,
) -> GeneSets:
    """Resolve a gene-set argument to ``{set name: [genes]}``.

    Parameters
    ----------
    gene_sets
        One of

        - a mapping ``{name: genes}``;
        - a path to a GMT file (plain, ``.gz``, or ``.zip``), a PanglaoDB TSV or a CellMarker CSV;
        - a library name (case-insensitive): ``"hallmark_human"`` (MSigDB Hallmark v2025, shipped with the
          package), ``"hallmark_mouse"``, ``"hallmark_v7"``, ``"go_bp_human"`` (Enrichr GO BP 2021),
          ``"go_bp_mouse"`` (GO2MSIG 2015, upper-case symbols), ``"panglaodb"``, ``"panglaodb_human"``,
          ``"panglaodb_mouse"``, ``"cellmarker_mouse"``. Files are resolved through the data registry
          (:func:`scsparse.data.fetch`, i.e. ``SCSPARSE_DATA_DIR``).
    species
        For PanglaoDB: keep the markers of one species (overrides the ``_human``/``_mouse`` suffix).

    Returns
    -------
    dict
        Set name -> list of gene symbols.

    Raises
    ------
    GeneSetError
        An unknown library name (the message lists the known ones), a malformed file, an empty mapping, or a
        library that is neither in ``SCSPARSE_DATA_DIR`` nor downloadable.
    FileNotFoundError
        A path (the argument contains a path separator or a file extension) that does not exist.

    Examples
    --------
    >>> from scsparse.tl import load_gene_sets
    >>> hallmark = load_gene_sets("hallmark_human")
    >>> len(hallmark)
    50
    >>> load_gene_sets({"IFN": ["ISG15", "IFI6", "MX1"]})
    {'IFN': ['ISG15', 'IFI6', 'MX1']}
    """
    if isinstance(gene_sets, Mapping):
        out: GeneSets = {}
        for name, genes in gene_sets.items():
            if isinstance(genes, str):
                raise GeneSetError(
                    f"Gene set {name!r} is a single string; give a list of genes, e.g. {{{name!r}: [{genes!r}]}}."
                )
            out[str(name)] = list(dict.fromkeys(str(g).strip() for g in genes if str(g).strip()))
        if not out:
            raise GeneSetError("The gene-set mapping is empty.")
        return out
    if not isinstance(gene_sets, str | PathLike):
        raise GeneSetError(
            f"gene_sets must be a mapping, a file path or a library name, got {type(gene_sets).__name__}."
        )
    text = str(gene_sets)
    key = _ALIASES.get(text.strip().lower(), text.strip().lower())
    if key in GENE_SET_LIBRARIES:
        return _read_library(key, species)
    path = Path(text).expanduser()
    if path.is_file():
        options = {"species": species} if species is not None else {}
        fmt = None
        if options:
            header = _open_text(path).split("\n", 1)[0]
            fmt = "panglaodb" if "official gene symbol" in header else None
            options = options if fmt == "panglaodb" else {}
        return _read_file(path, fmt, **options)
    looks_like_path = (
        isinstance(gene_sets, PathLike)
        or any(s in text for s in ("/", "\\"))
        or bool(re.search(r"\.(gmt|gz|zip|tsv|csv|txt)$", text, flags=re.IGNORECASE))
    )
    if looks_like_path:
        raise FileNotFoundError(f"Gene-set file {text!r} not found.")
    raise GeneSetError(
        f"Unknown gene-set library {text!r}: it is neither a file nor a known name. Known names: "
        f"{', '.join(GENE_SET_LIBRARIES)} (or pass a GMT path or a dict {{name: [genes]}})."
    )


_PREFIXES = ("HALLMARK_", "GOBP_", "GO_", "KEGG_", "REACTOME_")


def short_term(term: str, max_chars: int = 40, strip_prefix: bool = True) -> str:
    """A readable one-line label of a gene-set name: collection prefix removed, ``_`` as spaces, truncated.

    Examples
    --------
    >>> short_term("HALLMARK_INTERFERON_ALPHA_RESPONSE")
    'INTERFERON ALPHA RESPONSE'
    >>> short_term("regulation of transcription by RNA polymerase II (GO:0006357)", max_chars=30)
    'regulation of transcription b…'
    """
    label = str(term)
    if strip_prefix:
        for prefix in _PREFIXES:
            if label.upper().startswith(prefix):
                label = label[len(prefix) :]
                break
        if "_" in label and " " not in label:
            label = label.replace("_", " ")
    if len(label) > max_chars:
        label = re.sub(r"\s*\((GO|R-HSA|WP)[:\-][^)]*\)$", "", label)  # drop a trailing id before truncating
    if len(label) > max_chars:
        label = label[: max(1, max_chars - 1)].rstrip() + "…"
    return label
