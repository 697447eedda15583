import logging
import subprocess
import sys
import textwrap
import warnings

from scsparse.train import clean_training_output
from scsparse.train._output import LIGHTNING_INFO_LOGGER

SHORT_FIT = textwrap.dedent(
    """
    import numpy as np, anndata as ad, scipy.sparse as sp
    from scsparse.model import SparseVAE

    rng = np.random.default_rng(0)
    adata = ad.AnnData(X=sp.csr_matrix(rng.poisson(2.0, size=(64, 12)).astype(np.float32)))
    adata.layers["counts"] = adata.X.copy()
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=2, n_hidden=8)
    model.train(max_epochs=2, batch_size=32)
    print("fit done")
    """
)


def test_a_fit_prints_no_lightning_advert_or_deprecation():
    # a user's process: default warning filters and logging, nothing from the test suite's configuration
    run = subprocess.run([sys.executable, "-c", SHORT_FIT], capture_output=True, text=True, timeout=300)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    assert "fit done" in output
    assert "Epoch 2/2" in output  # the progress bar still shows
    assert "GPU available" in output  # and Lightning's GPU line (is an available GPU used?), as in scvi-tools
    assert "TPU available" not in output  # not the line about TPUs there are none of
    assert "Seed set to" not in output  # the seed is the model's, recorded in uns, not news
    assert "Tip:" not in output and "litlogger" not in output
    assert "deprecated" not in output.lower() and "LeafSpec" not in output


def test_clean_training_output_drops_adverts_and_keeps_other_records(caplog):
    info = logging.getLogger(LIGHTNING_INFO_LOGGER)
    with caplog.at_level(logging.INFO, logger=LIGHTNING_INFO_LOGGER):
        with clean_training_output():
            info.info("💡 Tip: For seamless cloud logging and experiment tracking, try installing litlogger")
            info.info("GPU available: False, used: False")
            info.info("TPU available: False, using: 0 TPU cores")
            info.info("TPU available: True, using: 8 TPU cores")
        info.info("💡 Tip: outside the block")
    assert [r.getMessage() for r in caplog.records] == [
        "GPU available: False, used: False",
        "TPU available: True, using: 8 TPU cores",
        "💡 Tip: outside the block",
    ]
    assert not info.filters


def test_clean_training_output_silences_only_third_party_and_expected_warnings():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with clean_training_output([r".*smaller than the logging interval.*"]):
            warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated", FutureWarning, stacklevel=1)
            warnings.warn("The number of training batches (2) is smaller than the logging interval", stacklevel=1)
            warnings.warn("a user's own warning", UserWarning, stacklevel=1)
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated after the block", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == [
        "a user's own warning",
        "`isinstance(treespec, LeafSpec)` is deprecated after the block",
    ]


def test_loading_and_new_cells_do_not_print_scvi_tools_routine_notes(counts_factory, tmp_path, caplog):
    from scsparse.model import SparseVAE

    adata = counts_factory(n_obs=80, n_vars=20)
    SparseVAE.setup_anndata(adata, layer="counts")
    model = SparseVAE(adata, n_latent=2, n_hidden=8, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.train(max_epochs=1, batch_size=32, enable_progress_bar=False)
    model.save(tmp_path / "model", overwrite=True)
    with caplog.at_level(logging.INFO, logger="scvi"):
        loaded = SparseVAE.load(tmp_path / "model", adata=adata)
        loaded.get_latent_representation(adata.copy())
        fresh = adata.copy()
        for key in [k for k in fresh.uns if k.startswith("_scvi")]:
            del fresh.uns[key]
        loaded.get_latent_representation(fresh)
        messages = [r.getMessage() for r in caplog.records]
        logging.getLogger("scvi.data._download").info("File x already downloaded")  # outside our calls: printed
    assert not [m for m in messages if "already downloaded" in m or "transfer" in m or "appears to be a copy" in m]
    assert "File x already downloaded" in caplog.text
