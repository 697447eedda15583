"""The ASF/AMC parser on a tiny skeleton and motion the test writes, and the CMU subject 07 loader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scsparse.generic.datasets import CMU07_TRIALS, load_cmu_mocap, parse_amc, parse_asf

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"

ASF = """# tiny skeleton
:version 1.10
:name TINY
:units
  mass 1.0
  angle deg
:root
   order TX TY TZ RX RY RZ
   axis XYZ
:bonedata
  begin
     id 1
     name lhipjoint
     direction 0 -1 0
     length 2.0
  end
  begin
     id 2
     name lfemur
     dof rx ry rz
     limits (-160.0 20.0)
            (-70.0 70.0)
            (-60.0 70.0)
  end
  begin
     id 3
     name lfoot
     dof rx rz
     limits (-45.0 90.0)
            (-70.0 20.0)
  end
  begin
     id 4
     name ltoes
     dof rx
     limits (-90.0 20.0)
  end
:hierarchy
  begin
    root lhipjoint
    lhipjoint lfemur
  end
"""

AMC = """#!OML:ASF tiny
:FULLY-SPECIFIED
:DEGREES
1
root 1 2 3 10 11 12
lfemur -5 6 7
lfoot 1.5 -2.5e-1
ltoes 9
2
root 4 5 6 20 21 22
ltoes 8
lfemur -1 2 3
lfoot 0 1
"""


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    asf, amc = tmp_path / "tiny.asf", tmp_path / "tiny.amc"
    asf.write_text(ASF)
    amc.write_text(AMC)
    return asf, amc


def test_parse_asf_reads_channels_limits_and_skips_bones_without_dofs(tiny: tuple[Path, Path]) -> None:
    sk = parse_asf(tiny[0])
    assert sk.name == "TINY" and sk.angle_unit == "deg"
    assert list(sk.dofs) == ["root", "lfemur", "lfoot", "ltoes"]  # lhipjoint has no dof
    assert sk.dofs["root"] == ("tx", "ty", "tz", "rx", "ry", "rz")
    assert sk.dofs["lfoot"] == ("rx", "rz")
    assert sk.limits["lfemur"] == [(-160.0, 20.0), (-70.0, 70.0), (-60.0, 70.0)]
    assert sk.feature_names()[:3] == [("root", "rx"), ("root", "ry"), ("root", "rz")]
    assert len(sk.feature_names(include_root_translation=True)) == 12


def test_parse_amc_orders_values_by_skeleton_whatever_the_line_order(tiny: tuple[Path, Path]) -> None:
    sk = parse_asf(tiny[0])
    x = parse_amc(tiny[1], sk)
    np.testing.assert_allclose(x[0], [10, 11, 12, -5, 6, 7, 1.5, -0.25, 9])
    np.testing.assert_allclose(x[1], [20, 21, 22, -1, 2, 3, 0, 1, 8])  # ltoes came first in frame 2
    full = parse_amc(tiny[1], sk, include_root_translation=True)
    assert full.shape == (2, 12)
    np.testing.assert_allclose(full[:, :3], [[1, 2, 3], [4, 5, 6]])


def test_parse_errors_name_the_problem(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    sk = parse_asf(tiny[0])
    bad = tmp_path / "bad.amc"
    bad.write_text(AMC.replace("lfoot 0 1\n", "lfoot 0\n"))
    with pytest.raises(ValueError, match="'lfoot' has 1 values"):
        parse_amc(bad, sk)
    bad.write_text(AMC.replace("ltoes 8\n", ""))
    with pytest.raises(ValueError, match=r"frame 2 lacks the bones \['ltoes'\]"):
        parse_amc(bad, sk)
    bad.write_text(AMC.replace("ltoes 9", "rtoes 9"))
    with pytest.raises(ValueError, match="'rtoes' is not in the skeleton"):
        parse_amc(bad, sk)
    not_asf = tmp_path / "x.asf"
    not_asf.write_text("hello\n")
    with pytest.raises(ValueError, match="no ':root' section"):
        parse_asf(not_asf)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        parse_asf(tmp_path / "missing.asf")


def test_load_cmu_mocap_rejects_missing_trials() -> None:
    with pytest.raises(ValueError, match="not available"):
        load_cmu_mocap([4])


def test_load_cmu_subject07_has_59_angles_of_29_joints(monkeypatch: pytest.MonkeyPatch) -> None:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"offline data copy not found at {SHARED_DATA}")
    monkeypatch.setenv("SCSPARSE_DATA_DIR", str(SHARED_DATA))
    monkeypatch.setenv("SCSPARSE_OFFLINE", "1")
    data = load_cmu_mocap([1, 11])
    assert data.X.shape == (316 + 315, 59)  # the paper's 59 joint angles
    assert len(set(data.joints)) == 29  # of 29 joints
    assert list(np.unique(data.trial)) == [1, 11]
    assert data.feature_names[0] == "root_rx"
    assert np.isfinite(data.X).all()
    assert set(CMU07_TRIALS) == {1, 2, 3, 5, 6, 7, 8, 9, 10, 11}
