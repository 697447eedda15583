"""Query mapping: MultiStudySparseVAE.load_query_data adds new studies to a trained reference."""

import warnings

import numpy as np
import pytest
import torch

from scsparse.model import InvalidInputError, MultiStudySparseVAE

TRAIN = {"batch_size": 64, "enable_progress_bar": False}


@pytest.fixture(scope="module")
def saved_reference(counts_factory, tmp_path_factory):
    """The reference of :func:`trained_reference_and_query`, trained once for the module and saved with its data."""
    ref, query, model = trained_reference_and_query(counts_factory)
    folder = tmp_path_factory.mktemp("reference") / "model"
    model.save(folder)
    return ref, query, folder


@pytest.fixture
def ref_and_query(saved_reference):
    """A fresh copy of the trained reference for each test (loaded from its saved state) and fresh AnnData."""
    ref, query, folder = saved_reference
    ref, query = ref.copy(), query.copy()
    return ref, query, MultiStudySparseVAE.load(str(folder), adata=ref)


def trained_reference_and_query(counts_factory):
    """Studies s1, s2 as a trained reference (with active factors), s3 as the query AnnData."""
    adata = counts_factory(n_obs=360, n_vars=30)
    adata.obs["study"] = np.asarray(["s1", "s2", "s3"])[np.arange(adata.n_obs) % 3]
    ref = adata[adata.obs["study"] != "s3"].copy()
    query = adata[adata.obs["study"] == "s3"].copy()
    MultiStudySparseVAE.setup_anndata(ref, study_key="study", layer="counts")
    model = MultiStudySparseVAE(ref, n_latent_shared=3, n_latent_specific=2, n_hidden=16)
    model.train(max_epochs=40, **TRAIN)
    assert model.active_factors()  # a reference with programmes, so that frozen means something
    return ref, query, model


def _state(model):
    return {k: v.detach().clone() for k, v in model.module.state_dict().items()}


def _encoder_means(module, adata):
    x = torch.as_tensor(adata.layers["counts"].toarray())
    module.eval()
    with torch.no_grad():
        return module.encoder(torch.log1p(x))[0].loc.numpy()


def assert_reference_part_unchanged(after: dict, ref_state: dict) -> None:
    """The reference's encoder, decoder network, masks, EM state and likelihood in a query's state: bit for bit."""
    k = ref_state["decoder.W"].shape[1]
    for name, value in ref_state.items():
        if name.startswith("encoder."):
            assert torch.equal(after["encoder.first." + name[len("encoder.") :]], value), name
        elif name == "block_mask":
            continue
        elif name in ("decoder.W", "decoder.first", "decoder.prune_mask", "prior.p_star"):
            assert torch.equal(after[name][:, :k], value), name
        elif name == "decoder.head_weight":  # output units of the genes a reference programme selects
            selected = (ref_state["prior.p_star"] > 0.5).any(1)
            assert selected.any() and torch.equal(after[name][:, selected], value[:, selected])
        elif name == "prior.eta":
            assert torch.equal(after[name][:k], value)
        else:
            assert torch.equal(after[name], value), name


def test_query_trains_only_its_new_factors(ref_and_query):
    ref, query, reference = ref_and_query
    ref_state = _state(reference)
    q = MultiStudySparseVAE.load_query_data(query, reference, n_latent_specific=2)
    assert q.studies == ["s1", "s2", "s3"] and q.module.n_latent_frozen == reference.module.n_latent == 7
    assert q.factor_names[7:] == ["s3_0", "s3_1"] and not q.is_trained_
    start = _state(q)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        q.train(max_epochs=3, **TRAIN)
    # the reference encoder is in eval mode by design: Lightning's warning about it is not passed on
    assert not [w for w in caught if "eval mode" in str(w.message)]
    after = _state(q)
    k = 7
    assert_reference_part_unchanged(after, ref_state)
    # the new factors trained
    assert not torch.equal(after["decoder.W"][:, k:], start["decoder.W"][:, k:])
    assert not torch.equal(after["encoder.second.body.out.weight"], start["encoder.second.body.out.weight"])
    # the reference model itself is untouched
    assert all(torch.equal(v, ref_state[k2]) for k2, v in _state(reference).items())
    # query cells' shared factors are the reference encoder's (no study input), to float precision
    shared = q.get_latent_representation(query, kind="shared")
    np.testing.assert_allclose(shared, _encoder_means(reference.module, query)[:, :3], atol=1e-6)
    # the query model also places reference cells exactly where the reference does
    np.testing.assert_allclose(
        q.get_latent_representation(ref)[:, :k], reference.get_latent_representation(ref), atol=1e-6
    )
    spec = q.get_latent_representation(query, kind="specific")
    assert np.all(spec[:, :4] == 0) and np.any(spec[:, 4:] != 0)  # only the new study's block is filled
    table = q.factor_table()
    assert list(table.loc[table.study == "s3", "factor"]) == ["s3_0", "s3_1"]
    assert q._provenance()["params"]["n_latent_frozen"] == 7


def test_query_model_round_trips_and_stays_frozen(tmp_path, ref_and_query):
    _, query, reference = ref_and_query
    q = MultiStudySparseVAE.load_query_data(query, reference, n_latent_specific={"s3": 1}, seed=3)
    q.train(max_epochs=2, **TRAIN)
    q.save(tmp_path / "q")
    back = MultiStudySparseVAE.load(str(tmp_path / "q"), adata=query)
    assert back.module.n_latent_frozen == 7 and back.studies == q.studies and back.seed == 3
    np.testing.assert_allclose(back.get_latent_representation(query), q.get_latent_representation(query), atol=1e-6)
    frozen_w = back.module.decoder.W[:, :7].detach().clone()
    modes = {"first": [], "second": []}
    for name in modes:
        getattr(back.module.encoder, name).register_forward_pre_hook(
            lambda module, args, name=name: modes[name].append(module.training) if torch.is_grad_enabled() else None
        )
    back.train(max_epochs=1, **TRAIN)  # training on after loading keeps the reference part fixed
    assert torch.equal(back.module.decoder.W[:, :7], frozen_w)
    # the reference's encoder runs in evaluation mode (its batch-norm statistics stay), the new one trains
    assert modes["first"] and not any(modes["first"]) and all(modes["second"])


def test_query_errors_name_the_problem(ref_and_query, counts_factory):
    ref, query, reference = ref_and_query
    load = MultiStudySparseVAE.load_query_data
    with pytest.raises(InvalidInputError, match="already in the reference"):
        load(ref.copy(), reference)
    with pytest.raises(InvalidInputError, match="subset and order it"):
        load(query[:, ::-1].copy(), reference)
    with pytest.raises(InvalidInputError, match="missing"):
        load(query[:, :20].copy(), reference)
    no_study = query.copy()
    del no_study.obs["study"]
    with pytest.raises(InvalidInputError, match="study column"):
        load(no_study, reference)
    with pytest.raises(InvalidInputError, match="at least one new specific factor"):
        load(query.copy(), reference, n_latent_specific=0)
    with pytest.raises(InvalidInputError, match="not in the query"):
        load(query.copy(), reference, n_latent_specific={"s9": 2})
    # query studies whose keys would be the shared block's or each other's
    halves = np.arange(query.n_obs) % 2 == 0
    for names, message in (
        (("shared", "shared"), "clash with the names of the shared"),
        (("a b", "a_b"), "share AnnData keys"),
    ):
        renamed = query.copy()
        renamed.obs["study"] = np.where(halves, *names)
        with pytest.raises(InvalidInputError, match=message):
            load(renamed, reference)
        assert "_scvi_uuid" not in renamed.uns  # refused before anything is registered
    q = load(query.copy(), reference)
    q.train(max_epochs=1, **TRAIN)
    fourth = query.copy()
    fourth.obs["study"] = "s4"
    with pytest.raises(InvalidInputError, match="itself a query model"):
        load(fourth, q)
    with pytest.raises(InvalidInputError, match="weight_decay=0"):
        q.train(max_epochs=1, plan_kwargs={"weight_decay": 1e-6}, **TRAIN)
    untrained = MultiStudySparseVAE(ref, n_latent_shared=2, n_latent_specific=1, n_hidden=8)
    with pytest.raises(InvalidInputError, match="not trained"):
        load(query.copy(), untrained)
    seen = MultiStudySparseVAE(ref, n_latent_shared=2, n_latent_specific=1, n_hidden=8, encode_study=True)
    seen.train(max_epochs=1, **TRAIN)
    with pytest.raises(InvalidInputError, match="encode_study=False"):
        load(query.copy(), seen)
    # a batch covariate the reference never saw
    batched = ref.copy()
    MultiStudySparseVAE.setup_anndata(batched, study_key="study", layer="counts", batch_key="batch")
    with_batch = MultiStudySparseVAE(batched, n_latent_shared=2, n_latent_specific=1, n_hidden=8)
    with_batch.train(max_epochs=1, **TRAIN)
    new_batch = query.copy()
    new_batch.obs["batch"] = "c"
    with pytest.raises(InvalidInputError, match="not in the reference"):
        load(new_batch, with_batch)
    assert load(query.copy(), with_batch).module.n_batch == 2  # known batches map


def test_only_genes_outside_every_reference_programme_get_trainable_output_units(ref_and_query):
    _, query, reference = ref_and_query
    q = MultiStudySparseVAE.load_query_data(query, reference, n_latent_specific=1)
    module = q.module
    selected = (reference.module.prior.p_star > 0.5).any(1)
    mask = module._trainable_decoder_head_weight.bool()
    assert torch.equal(mask[0, :, 0], ~selected)  # whole rows: every hidden unit of a free gene
    # recomputed when a saved query model's state (its p*) is loaded
    state = module.state_dict()
    state["prior.p_star"][:, :7] = 0.0
    state["prior.p_star"][3, 0] = 0.9
    module.load_state_dict(state)
    expected = torch.ones(module.n_input, dtype=torch.bool)
    expected[3] = False
    assert torch.equal(module._trainable_decoder_head_weight.bool()[0, :, 0], expected)
    module.decoder.head_weight.grad = None
    module.decoder.head_weight.sum().backward()
    assert (
        module.decoder.head_weight.grad[:, 3].abs().sum() == 0 and module.decoder.head_weight.grad[:, 4].abs().sum() > 0
    )


def test_an_adapting_encoder_changes_the_encoding_not_the_programmes(ref_and_query):
    _, query, reference = ref_and_query
    q = MultiStudySparseVAE.load_query_data(query, reference, n_latent_specific=1, freeze_encoder=False)
    enc_before = {k: v.clone() for k, v in q.module.encoder.first.state_dict().items()}
    w_before = q.module.decoder.W[:, :7].detach().clone()
    q.train(max_epochs=2, **TRAIN)
    enc_after = q.module.encoder.first.state_dict()
    assert not torch.equal(enc_after["body.out.weight"], enc_before["body.out.weight"])
    assert torch.equal(q.module.decoder.W[:, :7], w_before)
    assert q._provenance()["params"]["freeze_reference_encoder"] is False


def test_gradient_masks_survive_pickling_and_deepcopy():
    import copy
    import pickle

    from scsparse.module import MultiStudySparseVAEModule

    module = MultiStudySparseVAEModule(10, 2, [1, 1, 2], n_latent_frozen=4, n_hidden=8)
    for clone in (pickle.loads(pickle.dumps(module)), copy.deepcopy(module)):
        clone.decoder.W.sum().backward()
        assert torch.equal(clone.decoder.W.grad[0], torch.tensor([0.0, 0, 0, 0, 1, 1]))
        assert not clone.encoder.first.body.out.weight.requires_grad
