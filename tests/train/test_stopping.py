import warnings
from types import SimpleNamespace

import pytest
import torch

from scsparse.train import FitNotSettledWarning, SettledStopping


class _Strategy:
    @staticmethod
    def reduce_boolean_decision(decision: bool, all: bool = True) -> bool:  # noqa: A002 - Lightning's name
        return decision


def _run(callback: SettledStopping, masks, elbos, warmup: int = 0, max_epochs: int = 100):
    """Feed the callback one epoch per mask; return the trainer after it stopped or ran out of epochs."""
    prior = SimpleNamespace(p_star=torch.zeros(4, 3))
    pl_module = SimpleNamespace(module=SimpleNamespace(prior=prior), n_epochs_kl_warmup=warmup)
    trainer = SimpleNamespace(
        current_epoch=0, max_epochs=max_epochs, callback_metrics={}, strategy=_Strategy(), should_stop=False
    )
    callback.on_train_start(trainer, pl_module)
    for epoch, (mask, elbo) in enumerate(zip(masks, elbos, strict=True)):
        trainer.current_epoch = epoch
        prior.p_star = torch.as_tensor(mask, dtype=torch.float32) * 0.9
        trainer.callback_metrics = {"elbo_validation": torch.tensor(elbo)}
        callback.on_train_epoch_end(trainer, pl_module)
        if trainer.should_stop:
            break
    trainer.current_epoch = epoch + 1
    callback.on_train_end(trainer, pl_module)
    return trainer


MASK = [[1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 0]]


def test_stops_once_mask_and_elbo_stay_put_for_a_window():
    cb = SettledStopping(window=3, min_elbo_improvement=1e-3)
    masks = [[[0, 0, 0]] * 4] * 2 + [MASK] * 10
    elbos = [1000.0, 900.0] + [800.0] * 10
    trainer = _run(cb, masks, elbos)
    assert trainer.should_stop and cb.stop_reason == "settled"
    assert cb.n_epochs == 2 + 3 + 1  # the stable run starts at epoch 2 and needs window + 1 epochs
    assert cb.history_frame()["stopping"].tolist() == ["settled"]


def test_does_not_stop_while_the_elbo_still_improves():
    cb = SettledStopping(window=3, min_elbo_improvement=1e-3)
    trainer = _run(cb, [MASK] * 12, [1000.0 - 5 * e for e in range(12)], max_epochs=12)
    assert not trainer.should_stop and cb.stop_reason == "max_epochs" and cb.n_epochs == 12


def test_does_not_stop_while_a_factor_switches_on_and_off_or_the_mask_moves():
    flicker = [MASK if e % 2 else [[1, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 0]] for e in range(12)]
    cb = SettledStopping(window=3, max_mask_changes=0.5)
    assert not _run(cb, flicker, [800.0] * 12, max_epochs=12).should_stop
    moving = [MASK if e % 2 else [[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 0]] for e in range(12)]
    cb = SettledStopping(window=4, max_mask_changes=0.0)  # one entry may always change, two may not
    assert not _run(cb, moving, [800.0] * 12, max_epochs=12).should_stop
    cb = SettledStopping(window=4, max_mask_changes=0.5)
    assert _run(cb, moving, [800.0] * 12).should_stop


def test_waits_for_the_kl_warmup():
    cb = SettledStopping(window=2)
    trainer = _run(cb, [MASK] * 20, [800.0] * 20, warmup=10)
    assert cb.n_epochs == 10 + 2 + 1 and trainer.should_stop


def test_warns_when_training_ended_before_the_fit_settled():
    cb = SettledStopping(window=5)
    _run(cb, [MASK] * 3, [800.0] * 3, max_epochs=3)
    with pytest.warns(FitNotSettledWarning, match="fewer than the window of 5"):
        cb.warn_if_not_settled()
    cb = SettledStopping(window=2)
    _run(cb, [MASK] * 10, [800.0] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cb.warn_if_not_settled()


@pytest.mark.parametrize(
    "kwargs",
    [{"window": 0}, {"window": 2.5}, {"max_mask_changes": 1.0}, {"min_elbo_improvement": -1}, {"start_epoch": -1}],
)
def test_rejects_bad_settings(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SettledStopping(**kwargs)


def test_from_argument():
    cb = SettledStopping(window=7)
    assert SettledStopping.from_argument(cb) is cb
    assert SettledStopping.from_argument(True).window == 20
    assert SettledStopping.from_argument(False) is None
    with pytest.raises(TypeError, match="stop_when_settled"):
        SettledStopping.from_argument("yes")
