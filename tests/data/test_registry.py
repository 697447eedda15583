from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pandas as pd
import pooch
import pytest

import scsparse.data as sd
from scsparse.data import _registry

EXPECTED = {
    "kang2018", "zeisel_subset", "zeisel_full", "pbmc3k", "cellbench", "pbmc_3batch", "hallmark_human",
    "hallmark_mouse", "hallmark_v7", "go_bp_human", "go_bp_mouse", "panglaodb", "cellmarker_mouse",
    "movielens_small", "movielens_100k", "text_neurips", "olshausen_images", "cmu_mocap07", "smiley_vsc",
    "fashion_mnist",
}  # fmt: skip
KANG = "multistudy/kang2018_scgen/valid.h5ad"
HALLMARK = "genesets/h.all.v7.0.symbols.gmt"
RAW_URL = r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/.+"


def _all_files():
    return [(name, f) for name, e in sd.registry().items() for f in e["files"]]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_registry_structure():
    reg = sd.registry()
    assert EXPECTED <= set(reg)
    for name, entry in reg.items():
        assert entry["name"] == name
        for key in ("description", "license", "citation"):
            assert isinstance(entry[key], str) and entry[key], (name, key)
        assert entry["files"], name
        for f in entry["files"]:
            assert re.fullmatch(r"[0-9a-f]{64}", f["sha256"]), f
            assert isinstance(f["size"], int) and f["size"] > 0
            assert not Path(f["path"]).is_absolute() and ".." not in Path(f["path"]).parts
            if f["url"] is None:
                assert f.get("note"), f"{f['path']}: url null without a note"
            else:
                assert re.fullmatch(RAW_URL, f["url"]), f["url"]


def test_same_path_same_hash_across_entries():
    seen: dict[str, str] = {}
    for _, f in _all_files():
        assert seen.setdefault(f["path"], f["sha256"]) == f["sha256"]


def test_every_sha256_and_size_matches_the_shared_files(shared_data):
    for name, f in _all_files():
        local = shared_data / f["path"]
        assert local.is_file(), f"{name}: {f['path']} missing from {shared_data}"
        assert local.stat().st_size == f["size"], f["path"]
        assert _sha256(local) == f["sha256"], f["path"]


def test_registry_covers_every_shared_file(shared_data):
    listed = {f["path"] for _, f in _all_files()}
    on_disk = {
        p.relative_to(shared_data).as_posix() for p in shared_data.rglob("*") if p.is_file() and p.name != "MANIFEST.md"
    }
    assert on_disk == listed


def test_registry_is_a_copy():
    reg = sd.registry()
    reg["kang2018"]["files"].clear()
    assert sd.registry()["kang2018"]["files"]


def test_data_dir_env_and_default(monkeypatch, tmp_path):
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    assert sd.data_dir() == tmp_path
    monkeypatch.delenv("SCSPARSE_DATA_DIR")
    assert sd.data_dir() == Path(pooch.os_cache("scsparse"))


def test_list_datasets(shared_data):
    df = sd.list_datasets()
    assert isinstance(df, pd.DataFrame)
    assert EXPECTED <= set(df.index)
    assert {"description", "n_files", "size_mb", "downloadable", "available", "license", "citation"} <= set(df.columns)
    assert df["available"].all()
    assert df.loc["kang2018", "downloadable"] and not df.loc["fashion_mnist", "downloadable"]


def test_fetch_returns_verified_paths_and_caches_hashes(shared_data, monkeypatch):
    paths = sd.fetch("kang2018")
    assert paths == {KANG: shared_data / KANG}
    calls = []
    real = hashlib.sha256
    monkeypatch.setattr(_registry.hashlib, "sha256", lambda *a: calls.append(1) or real(*a))
    sd.fetch("kang2018")
    assert calls == []  # verified once per process


def test_fetch_subset_of_files(shared_data):
    paths = sd.fetch("cellbench", ["sc_dropseq.count.csv.gz"])
    assert list(paths) == ["multistudy/cellbench_sc_mixology/sc_dropseq.count.csv.gz"]
    with pytest.raises(ValueError, match="no file"):
        sd.fetch("cellbench", ["nope.csv"])


def test_fetch_without_network_raises_data_not_available(monkeypatch, tmp_path):
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SCSPARSE_OFFLINE", raising=False)

    def no_network(*args, **kwargs):
        raise ConnectionError("no route to host")

    monkeypatch.setattr(pooch, "retrieve", no_network)
    url = sd.registry()["kang2018"]["files"][0]["url"]
    with pytest.raises(sd.DataNotAvailableError) as info:
        sd.fetch("kang2018")
    msg = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert KANG in msg and url in msg and "SCSPARSE_DATA_DIR" in msg and "kang2018" in msg


def test_offline_env_skips_download(monkeypatch, tmp_path):
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    calls = []
    monkeypatch.setattr(pooch, "retrieve", lambda *a, **k: calls.append(a))
    with pytest.raises(sd.DataNotAvailableError, match="SCSPARSE_OFFLINE"):
        sd.fetch("kang2018")
    assert calls == []


def test_file_without_url_is_not_downloaded(monkeypatch, tmp_path):
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SCSPARSE_OFFLINE", raising=False)
    calls = []
    monkeypatch.setattr(pooch, "retrieve", lambda *a, **k: calls.append(a))
    with pytest.raises(sd.DataNotAvailableError, match="no public URL"):
        sd.fetch("fashion_mnist", ["t10k-labels-idx1-ubyte.gz"])
    assert calls == []


def test_download_goes_to_the_cache_and_is_verified(monkeypatch, tmp_path):
    src = Path(__file__).resolve().parents[2].parent / "shared" / "data" / HALLMARK
    if not src.is_file():
        pytest.skip("offline data copy not available")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("SCSPARSE_OFFLINE", raising=False)
    seen = {}

    def fake_retrieve(url, known_hash, path, fname, **kwargs):
        seen.update(url=url, known_hash=known_hash)
        Path(path).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, Path(path) / fname)
        return str(Path(path) / fname)

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    paths = sd.fetch("hallmark_v7", [HALLMARK])
    assert paths[HALLMARK] == tmp_path / HALLMARK and paths[HALLMARK].is_file()
    entry = next(f for f in sd.registry()["hallmark_v7"]["files"] if f["path"] == HALLMARK)
    assert seen == {"url": entry["url"], "known_hash": f"sha256:{entry['sha256']}"}


def test_corrupted_file_raises_checksum_error(shared_data, monkeypatch, tmp_path):
    target = tmp_path / HALLMARK
    target.parent.mkdir(parents=True)
    data = bytearray((shared_data / HALLMARK).read_bytes())
    data[100:104] = bytes(b ^ 0xFF for b in data[100:104])
    target.write_bytes(bytes(data))
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(tmp_path))
    expected = next(f for f in sd.registry()["hallmark_v7"]["files"] if f["path"] == HALLMARK)["sha256"]
    with pytest.raises(sd.DataChecksumError) as info:
        sd.fetch("hallmark_v7", [HALLMARK])
    msg = str(info.value)
    assert expected in msg and _sha256(target) in msg and str(target) in msg


def test_unknown_dataset_lists_names():
    with pytest.raises(KeyError) as info:
        sd.fetch("no_such_dataset")
    assert isinstance(info.value, sd.UnknownDatasetError)
    assert "no_such_dataset" in str(info.value) and "kang2018" in str(info.value)
    with pytest.raises(ValueError, match="kang2018"):
        sd.load("no_such_dataset")


def test_public_api():
    for name in (
        "load", "fetch", "list_datasets", "data_dir", "registry", "DataNotAvailableError", "kang_pbmc",
        "kang2018", "zeisel_subset", "zeisel_full", "pbmc3k", "cellbench",
    ):  # fmt: skip
        assert name in sd.__all__ and hasattr(sd, name)
    assert issubclass(sd.DataNotAvailableError, FileNotFoundError)
