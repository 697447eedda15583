import math

from scsparse.generic.benchmarks._paper import no_active_factor_note


def test_no_active_factor_note_counts_fits_with_every_factor_off():
    assert no_active_factor_note([2.0, 5.0, math.nan]) == []
    (line,) = no_active_factor_note([0.0, 3.0, 0.0, math.nan], method="MySVAE")
    assert line.startswith("- MySVAE ended with **no active factor** in 2 of 3 fits")
    assert "cannot be read as programmes" in line


def test_quiet_training_logs_silences_the_no_active_factor_warning_only_inside():
    import warnings

    from scsparse.generic.benchmarks._process import quiet_training_logs
    from scsparse.nn import NoActiveFactorWarning, warn_no_active_factor

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_training_logs():
            warn_no_active_factor(100, 10)
        assert caught == []
        warn_no_active_factor(100, 10)
    assert [w.category for w in caught] == [NoActiveFactorWarning]


def test_slab_threshold_note_names_both_thresholds_when_lambda1_departs_from_the_paper():
    from scsparse.generic.benchmarks._paper import slab_threshold_note

    assert slab_threshold_note(5.0, 0.001, paper_lambda1=0.001) == ""
    note = slab_threshold_note(5.0, 1.0, paper_lambda1=0.001)
    assert "|w| = 1.70 at lambda1 = 0.001 against 0.40 at lambda1 = 1" in note
