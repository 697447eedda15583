import numpy as np
import pandas as pd
import pytest
import torch

from scsparse.generic.benchmarks import BENCHMARKS
from scsparse.generic.benchmarks._speed._pergene import PerGeneLoopDecoder, per_gene_loop_copy
from scsparse.generic.benchmarks._speed._run import RESULT_COLUMNS, decoder_step_flops, run_speed, simulate_counts
from scsparse.module import SparseVAEModule
from scsparse.nn import MaskedDecoder


@pytest.mark.parametrize("first_bias", [False, True])
@pytest.mark.parametrize("n_layers", [1, 2])
def test_per_gene_loop_matches_vectorised_outputs_and_gradients(n_layers, first_bias):
    torch.manual_seed(0)
    dec = MaskedDecoder(
        n_latent=4,
        n_output=9,
        n_hidden=6,
        n_layers=n_layers,
        n_heads=2,
        n_cat_list=[3],
        chunk_size=4,
        first_bias=first_bias,
    )
    loop = per_gene_loop_copy(dec)
    assert isinstance(loop, PerGeneLoopDecoder)
    z = torch.randn(5, 4)
    batch = torch.tensor([0, 2, 1, 1, 0])
    out_vec, out_loop = dec(z, batch), loop(z, batch)
    assert out_loop.shape == (2, 5, 9)
    torch.testing.assert_close(out_vec, out_loop, rtol=1e-5, atol=1e-6)
    out_vec.square().sum().backward()
    out_loop.square().sum().backward()
    for (name, p_vec), p_loop in zip(dec.named_parameters(), loop.parameters(), strict=True):
        torch.testing.assert_close(p_vec.grad, p_loop.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_identical_losses_on_same_weights_and_batch():
    torch.manual_seed(1)
    module = SparseVAEModule(n_input=30, n_latent=5, n_hidden=16)
    x = torch.distributions.Poisson(torch.rand(8, 30) * 3).sample()
    losses = []
    for dec in (module.decoder, per_gene_loop_copy(module.decoder)):
        module.decoder = dec
        torch.manual_seed(2)  # the same reparameterisation noise
        _, _, out = module({"X": x}, loss_kwargs={"n_obs": 100})
        losses.append(out.loss)
    torch.testing.assert_close(losses[0], losses[1], rtol=1e-6, atol=1e-4)


def test_decoder_step_flops_counts_matmuls():
    # one layer: forward 2*G*B*(K*H + H) multiply-adds x 3 for forward + backward
    assert decoder_step_flops(10, 4, 3, 5) == 3 * 2 * 40 * (15 + 5)
    assert decoder_step_flops(10, 4, 3, 5, n_layers=2, n_heads=2) == 3 * 2 * 40 * (15 + 25 + 10)


def test_simulate_counts_is_seeded_integer_counts():
    a, b = simulate_counts(50, 20, seed=3), simulate_counts(50, 20, seed=3)
    x = a.layers["counts"].toarray()
    assert (x == b.layers["counts"].toarray()).all()
    assert (x >= 0).all() and (x == x.round()).all() and x.sum() > 0


def test_run_speed_tiny(tmp_path):
    assert "speed" in BENCHMARKS
    df = run_speed(
        tmp_path,
        n_cells=96,
        n_genes=24,
        max_epochs=2,
        batch_size=32,
        n_hidden=8,
        n_latent=4,
        scale=False,
        time_to_fit=False,
        sections="epoch,flops,sparsity",
        verbose=False,
    )
    assert list(df.columns) == RESULT_COLUMNS
    assert set(df["section"]) == {"epoch", "step", "flops", "sparsity"}
    saved = pd.read_csv(tmp_path / "results.csv")
    assert len(saved) == len(df)
    diff = df[df["metric"] == "abs_loss_difference"]["value"].iloc[0]
    assert diff < 1e-3
    times = df[df["metric"] == "seconds_per_epoch"].set_index("method")["value"]
    assert (times > 0).all() and len(times) == 5  # and SparseVAE and SCVI at SCVI's default K = 10
    ratios = df[df["metric"] == "ratio"].set_index("method")["value"]
    assert ratios["SparseVAE / SCVI, K = 10"] > 0
    epoch = df[df["section"] == "epoch"].set_index(["method", "metric"])["value"]
    for method in ("SparseVAE / SCVI", "SparseVAE / SCVI, K = 10"):  # the median of three rounds, in their range
        lowest, highest = epoch[(method, "ratio_lowest")], epoch[(method, "ratio_highest")]
        assert 0 < lowest <= epoch[(method, "ratio")] <= highest
    errors = df[df["metric"] == "max_relative_error_float64"].set_index("method")["value"]
    assert set(errors.index) == {"scsparse decoder step", "decoder step, autograd"}
    assert (errors > 0).all() and (errors < 1e-4).all()  # float32 rounding against the float64 decoder
    assert "peak_memory_mb" not in set(df["metric"])  # GPU memory: measured on CUDA devices only
    sparsity = df[df["section"] == "sparsity"].set_index("metric")["value"]
    assert 0.0 <= sparsity["active_entries_fraction"] <= 1.0 and sparsity["ratio"] > 0
    n_groups = sparsity[["genes_with_0_active", "genes_with_1_active", "genes_with_2plus_active"]].sum()
    assert n_groups == pytest.approx(1.0)
    summary = (tmp_path / "summary.md").read_text()
    assert "per-gene loop" in summary and "SparseVAE epoch time <= 3x SCVI" in summary
    assert "3 round(s)" in summary and "at K = 4 (rounds " in summary
    assert "`FusedMaskedLayer`" in summary and "against float64" in summary
    with pytest.raises(ValueError, match="device must be"):
        run_speed(tmp_path, device="tpu")
    with pytest.raises(ValueError, match="Unknown section"):
        run_speed(tmp_path, sections="epoch,warp")


def test_settled_section_times_the_settled_fit_and_every_entry_against_scvi(tmp_path):
    from scsparse.generic.benchmarks._speed._run import simulate_counts
    from scsparse.generic.benchmarks._speed._settled import settled_rows, settled_targets

    adata = simulate_counts(96, 24, n_programmes=3, seed=0)
    rows = settled_rows(
        adata, latents=(3, 20), settle_cells=96, settle_epochs=6, epochs=2, rounds=2, batch_size=32, n_hidden=8,
        device="cpu", seed=0, verbose=False,
    )  # fmt: skip
    df = pd.DataFrame(rows)
    values = df.set_index(["method", "metric"])["value"]
    for k in (3, 20):
        assert 0 < values[(f"SparseVAE, settled mask, K = {k}", "active_entries_fraction")] <= 1
        for method in ("every entry", "active set"):
            assert values[(f"SparseVAE, settled mask, {method}, K = {k}", "seconds_per_epoch")] > 0
        ratio = values[(f"active set / SCVI, K = {k}", "ratio")]
        assert values[(f"active set / SCVI, K = {k}", "ratio_lowest")] <= ratio
        assert ratio <= values[(f"active set / SCVI, K = {k}", "ratio_highest")]
    ((ok, text),) = settled_targets(df)
    assert text.startswith("settled mask, active set: SparseVAE epoch <= 1.5x SCVI's at K = 20")


def test_time_to_fit_section_reports_fits_side_by_side(tmp_path):
    from scsparse.generic.benchmarks._speed._time_to_fit import (
        time_to_fit_rows,
        time_to_fit_summary,
        time_to_fit_targets,
    )

    df = pd.DataFrame(time_to_fit_rows(datasets=("kang",), quick=True, verbose=False))
    assert set(df["method"]) == {
        "SparseVAE (defaults, stops when settled)",
        "SparseVAE (exact zeros and active set, stops when settled)",
        "SparseVAE (fixed epochs, no stopping)",
        "scvi-tools SCVI (defaults)",
    }
    values = df.set_index(["method", "metric"])["value"]
    for method in set(df["method"]):
        assert values[(method, "seconds")] > 0 and values[(method, "heldout_nll")] > 0
        assert values[(method, "epochs")] == 20  # the quick cap: too short to settle
    assert values[("SparseVAE (defaults, stops when settled)", "settled")] == 0.0
    assert (df["n_cells"] == 300).all() and (df["n_genes"] == 200).all()
    jaccard = df[df["metric"] == "jaccard_vs_default"].set_index("method")["value"]
    assert set(jaccard.index) == {  # the other SparseVAE fits, against the default fit of the same seed
        "SparseVAE (exact zeros and active set, stops when settled)",
        "SparseVAE (fixed epochs, no stopping)",
    }
    factors = values.xs("active_factors", level="metric")
    for method, value in jaccard.items():  # nothing to compare (no programme in either fit) is nan, not 0
        none = factors["SparseVAE (defaults, stops when settled)"] == 0 and factors[method] == 0
        assert np.isnan(value) if none else 0 <= value <= 1
    lines = time_to_fit_summary(df.assign(section="time_to_fit"))
    assert any("jaccard_vs_default" in line for line in lines)
    assert any(line.startswith("### kang (300 cells x 200 genes)") for line in lines)
    targets = dict((text.split(":")[0], ok) for ok, text in time_to_fit_targets(df))
    assert targets["Kang with defaults settles in under 5 minutes"] is False  # 20 epochs cannot settle
    assert "Kang with exact zeros and the active set faster than SCVI's default fit" in targets


def test_consensus_section_times_a_consensus_against_one_fit():
    from scsparse.generic.benchmarks._speed._consensus import (
        QUICK_EPOCHS,
        consensus_rows,
        consensus_summary,
        consensus_targets,
    )

    df = pd.DataFrame(consensus_rows(datasets=("kang",), quick=True, verbose=False))
    assert set(df["method"]) == {"SparseVAE (defaults), R = 1", "SparseVAE.consensus, R = 2"}
    values = df.set_index(["method", "metric"])["value"]
    single, pair = values["SparseVAE (defaults), R = 1"], values["SparseVAE.consensus, R = 2"]
    assert single["ratio_to_single"] == 1.0
    assert pair["seconds"] > 0 and pair["ratio_to_single"] == pytest.approx(pair["seconds"] / single["seconds"])
    assert pair["seconds_per_restart"] == pytest.approx(pair["seconds"] / 2)
    assert single["restart_epochs"] <= QUICK_EPOCHS and pair["restart_epochs"] <= QUICK_EPOCHS
    assert np.isnan(single["refit_epochs"]) and 1 <= pair["refit_epochs"] <= QUICK_EPOCHS
    lines = consensus_summary(df)
    assert any(line.startswith("### kang (300 cells x 200 genes)") for line in lines)
    ((ok, text),) = consensus_targets(df)
    assert ok == (pair["ratio_to_single"] <= 5.0) and "a consensus of 2 restarts" in text


def test_a_full_run_leaves_the_consensus_section_out_unless_named():
    from scsparse.generic.benchmarks._speed._run import SECTIONS, chosen_sections

    assert "consensus" not in chosen_sections(None, quick=False)  # about 25 single fits
    assert chosen_sections(None, quick=True) == set(SECTIONS)
    assert chosen_sections("consensus,epoch", quick=False) == {"consensus", "epoch"}
