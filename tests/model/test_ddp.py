"""Lightning DDP with two CPU processes (gloo): the EM state of the SSL prior stays identical on every rank.

``strategy="ddp_spawn"`` starts two fresh Python processes, so the callback and the model classes used
here are defined at module level (the children unpickle them by import).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from lightning.pytorch.callbacks import Callback

from scsparse.model import MultiStudySparseVAE, SparseVAE
from scsparse.module import SparseVAEModule

DDP = {"accelerator": "cpu", "devices": 2, "strategy": "ddp_spawn", "enable_progress_bar": False}


class RankStateDump(Callback):
    """At the end of training, each rank saves its module's state dict and what it trained on."""

    def __init__(self, out_dir: str) -> None:
        self.out_dir = out_dir

    def on_train_end(self, trainer, pl_module) -> None:
        state = {k: v.detach().cpu().clone() for k, v in pl_module.module.state_dict().items()}
        info = {"world_size": trainer.world_size, "n_batches": trainer.num_training_batches}
        torch.save({"state": state, "info": info}, Path(self.out_dir) / f"rank{trainer.global_rank}.pt")


class MetricModule(SparseVAEModule):
    """The SparseVAE module plus a scalar ``LossOutput.extra_metrics`` entry (the gloo DDP trap)."""

    def loss(self, *args, **kwargs):
        out = super().loss(*args, **kwargs)
        out.extra_metrics = {"w_abs_mean": self.decoder.W.detach().abs().mean()}
        return out


class MetricSparseVAE(SparseVAE):
    """SparseVAE whose module logs an extra metric; training and EM are SparseVAE's."""

    _module_cls = MetricModule


def _rank_states(out_dir: Path) -> tuple[dict, dict]:
    ranks = [torch.load(out_dir / f"rank{r}.pt") for r in (0, 1)]
    assert all(r["info"]["world_size"] == 2 for r in ranks)
    return ranks[0], ranks[1]


def _local_statistic(key: str) -> bool:
    """BatchNorm running statistics: each rank averages its own minibatches (the model returns rank 0's)."""
    return key.endswith(("running_mean", "running_var", "num_batches_tracked"))


def _assert_identical_and_returned(model, r0: dict, r1: dict) -> None:
    em_keys = [k for k in r0["state"] if k.endswith(("decoder.W", "prior.p_star", "prior.eta"))]
    assert {k.rsplit(".", 1)[-1] for k in em_keys} == {"W", "p_star", "eta"}
    assert r0["state"].keys() == r1["state"].keys()
    shared = [k for k in r0["state"] if not _local_statistic(k)]
    assert len(shared) > len(em_keys)
    for key in shared:  # every weight and every other buffer, the EM state included, bit for bit
        assert torch.equal(r0["state"][key], r1["state"][key]), key
    final = model.module.state_dict()
    for key in em_keys:  # what the user gets back in this process is the ranks' state
        assert torch.equal(final[key].cpu(), r0["state"][key]), key


def test_sparsevae_ddp_two_cpu_ranks_identical_em_state(counts_factory, tmp_path):
    adata = counts_factory(n_obs=200, n_vars=30)
    MetricSparseVAE.setup_anndata(adata, layer="counts")
    model = MetricSparseVAE(adata, n_latent=4, n_hidden=16)
    w_init = model.module.decoder.W.detach().clone()
    model.train(max_epochs=3, batch_size=32, train_size=0.9, callbacks=[RankStateDump(str(tmp_path))], **DDP)

    r0, r1 = _rank_states(tmp_path)
    # each rank trained on its half of the 180 training cells: ceil(90 / 32) = 3 steps, not 6
    assert r0["info"]["n_batches"] == r1["info"]["n_batches"] == math.ceil(90 / 32)
    _assert_identical_and_returned(model, r0, r1)
    prior = model.module.prior
    assert not torch.equal(model.module.decoder.W.detach(), w_init)  # it trained
    torch.testing.assert_close(prior.eta, prior.eta_update(prior.p_star))  # eta is the update of the final p*
    assert ((prior.p_star >= 0) & (prior.p_star <= 1)).all()
    # the extra metric was logged outside inference mode (no gloo crash) and came back with the history
    assert model.is_trained_
    assert np.isfinite(model.history["w_abs_mean_train"].to_numpy(dtype=float)).all()
    assert len(model.history["elbo_train"]) == 3
    assert model.train_kwargs_["strategy"] == "ddp_spawn"
    z = model.get_latent_representation()
    assert z.shape == (200, 4) and np.isfinite(z).all()


@pytest.mark.slow
def test_multistudy_ddp_two_cpu_ranks_identical_em_state(counts_factory, tmp_path):
    adata = counts_factory(n_obs=200, n_vars=30)
    MultiStudySparseVAE.setup_anndata(adata, study_key="batch", layer="counts")
    model = MultiStudySparseVAE(adata, n_latent_shared=2, n_latent_specific=1, n_hidden=16)
    model.train(max_epochs=2, batch_size=32, callbacks=[RankStateDump(str(tmp_path))], **DDP)
    r0, r1 = _rank_states(tmp_path)
    _assert_identical_and_returned(model, r0, r1)
    prior = model.module.prior
    torch.testing.assert_close(prior.eta, prior.eta_update(prior.p_star))


@pytest.mark.slow
def test_query_mapping_ddp_keeps_the_reference_and_ranks_identical(counts_factory, tmp_path):
    from test_query import assert_reference_part_unchanged, trained_reference_and_query

    _, query, reference = trained_reference_and_query(counts_factory)
    ref_state = {k: v.detach().clone() for k, v in reference.module.state_dict().items()}

    q = MultiStudySparseVAE.load_query_data(query, reference, n_latent_specific=2)
    start_w = q.module.decoder.W.detach().clone()
    q.train(max_epochs=3, batch_size=16, callbacks=[RankStateDump(str(tmp_path))], **DDP)
    r0, r1 = _rank_states(tmp_path)
    _assert_identical_and_returned(q, r0, r1)
    # each rank and the model returned to this process: the reference part bit for bit, the new block trained
    for state in (r0["state"], r1["state"], q.module.state_dict()):
        assert_reference_part_unchanged({k: v.cpu() for k, v in state.items()}, ref_state)
    assert not torch.equal(q.module.decoder.W.detach()[:, 7:], start_w[:, 7:])
