import numpy as np


def test_scvi_tools_fit_follows_its_seed_inside_the_block_and_leaves_the_process_state(counts_factory):
    import scvi

    from scsparse.generic.benchmarks._fits import scvi_tools_fit

    adata = counts_factory(n_obs=60, n_vars=15)
    np.random.seed(123)  # noqa: NPY002 - the legacy global generator is what seeding changes
    before, previous_seed = np.random.get_state()[1].copy(), scvi.settings.seed  # noqa: NPY002
    kwargs = {"setup": {"layer": "counts"}, "model": {"n_latent": 2, "n_hidden": 8}}
    kwargs["train"] = {"max_epochs": 2, "enable_progress_bar": False}
    drawn = []
    for _ in range(2):
        with scvi_tools_fit(scvi.model.SCVI, adata.copy(), 7, **kwargs) as fit:
            drawn.append(fit.model.get_latent_representation(give_mean=False))  # a draw: follows the block's seed
        assert fit.seconds > 0
    assert np.array_equal(drawn[0], drawn[1])
    assert np.array_equal(np.random.get_state()[1], before) and scvi.settings.seed == previous_seed  # noqa: NPY002
