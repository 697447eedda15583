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
    assert "GPU available" in output  # and Lightning's device summary, as in scvi-tools
    assert "Tip:" not in output and "litlogger" not in output
    assert "deprecated" not in output.lower() and "LeafSpec" not in output


def test_clean_training_output_drops_adverts_and_keeps_other_records(caplog):
    info = logging.getLogger(LIGHTNING_INFO_LOGGER)
    with caplog.at_level(logging.INFO, logger=LIGHTNING_INFO_LOGGER):
        with clean_training_output():
            info.info("💡 Tip: For seamless cloud logging and experiment tracking, try installing litlogger")
            info.info("GPU available: False, used: False")
        info.info("💡 Tip: outside the block")
    assert [r.getMessage() for r in caplog.records] == [
        "GPU available: False, used: False",
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
