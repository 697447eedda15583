"""Generic models on plain arrays: the baselines of the papers behind one interface.

Every model is an :class:`ArrayModel`: ``fit(X)``, ``transform(X)`` (factors), ``loadings()`` (features x
factors, or ``None``), ``heldout_nll(X)`` (a true negative log-likelihood per row) and ``predict_mean(X)``.

- :class:`VAE`, :class:`BetaVAE` — dense VAEs (``"normal"``, ``"multinomial"``, ``"bernoulli"``);
- :class:`ArraySparseVAE` — the sparse VAE of Moran et al. (2022) on arrays, built from the blocks of the
  scvi-tools model (:class:`scsparse.model.SparseVAE`);
- :class:`NMF` — scikit-learn NMF;
- :class:`OIVAE`, :class:`VSC`, :class:`ThresholdedVSC` — oi-VAE, variational sparse coding and
  thresholded VSC;
- :class:`LinearSparseCodingVAE`, :func:`fista` — sparse coding with a linear generator (Fallah & Rozell
  2022): an inference network for ``x ~ A z`` and FISTA codes, the dictionary learned by
  :func:`dictionary_step` (not array models: the caller trains them);
- :func:`train_module`, :func:`as_loader` — the small trainer the torch models share.
"""

from ._base import ArrayModel, TorchArrayModel, TrainHistory, as_loader, train_module
from ._common import init_observation_variance
from ._linear_sparse_coding import (
    SPARSE_CODING_PRIORS,
    SPARSE_CODING_THRESHOLDS,
    SPIKE_TAU_DECAY,
    SPIKE_TAU_MIN,
    LinearSparseCodingVAE,
)
from ._modules import (
    ARRAY_LIKELIHOODS,
    DenseVAEModule,
    LatentVariableModule,
    SparseVAEArrayModule,
    check_likelihood_data,
)
from ._nmf import NMF, NMF_LIKELIHOODS
from ._oivae import OIVAE
from ._sparse_coding import dictionary_step, fista, init_dictionary, sparse_coding_objective
from ._sparse_vae import ArraySparseVAE, feature_variances
from ._tvsc import ThresholdedVSC
from ._vae import VAE, BetaVAE
from ._vsc import VSC

__all__ = [
    "ARRAY_LIKELIHOODS",
    "NMF_LIKELIHOODS",
    "SPARSE_CODING_PRIORS",
    "SPARSE_CODING_THRESHOLDS",
    "SPIKE_TAU_DECAY",
    "SPIKE_TAU_MIN",
    "ArrayModel",
    "ArraySparseVAE",
    "BetaVAE",
    "DenseVAEModule",
    "LatentVariableModule",
    "LinearSparseCodingVAE",
    "NMF",
    "OIVAE",
    "SparseVAEArrayModule",
    "ThresholdedVSC",
    "TorchArrayModel",
    "TrainHistory",
    "VAE",
    "VSC",
    "as_loader",
    "check_likelihood_data",
    "dictionary_step",
    "feature_variances",
    "fista",
    "init_dictionary",
    "init_observation_variance",
    "sparse_coding_objective",
    "train_module",
]


def __getattr__(name: str):
    """``SparseVAE``: the former name of :class:`ArraySparseVAE`, deprecated (removed in 0.3)."""
    if name == "SparseVAE":
        import warnings

        warnings.warn(
            "scsparse.generic.models.SparseVAE is now ArraySparseVAE (the name SparseVAE is the scvi-tools model, "
            "scsparse.model.SparseVAE); the old name will be removed in scsparse 0.3.",
            FutureWarning,
            stacklevel=2,
        )
        return ArraySparseVAE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
