"""CMU motion capture (Acclaim ASF skeleton + AMC motion files), joints as feature groups.

The Acclaim format has two text files. The ``.asf`` skeleton lists the root's channel order and, per bone,
its name and the degrees of freedom (``dof rx ry rz``) that the motion file records. The ``.amc`` motion file
is a sequence of frames: a line with the frame number, then one line per bone, ``name v1 v2 ...``, with one
value per degree of freedom in the order the skeleton gives (the root: ``TX TY TZ RX RY RZ``). Bones without
degrees of freedom (e.g. the hip joints) never appear in the motion file.

:func:`load_cmu_mocap` turns the trials of CMU subject 07 (registry ``"cmu_mocap07"``) into a frames x
joint-angles matrix whose features are grouped by joint, as in the oi-VAE motion-capture experiment
(Ainsworth et al., 2018: 59 joint angles of 29 joints; the root's translation is left out).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from scsparse.data import fetch

__all__ = [
    "CMU07_TRIALS",
    "AsfSkeleton",
    "MocapData",
    "load_cmu_mocap",
    "parse_amc",
    "parse_asf",
]

#: Registry name of CMU subject 07.
_DATASET = "cmu_mocap07"
#: The walking trials of subject 07 at hand (04 and 12 are missing from the registry).
CMU07_TRIALS: tuple[int, ...] = (1, 2, 3, 5, 6, 7, 8, 9, 10, 11)
_ROOT_TRANSLATION = ("tx", "ty", "tz")


@dataclass
class AsfSkeleton:
    """The parts of an ASF skeleton that a motion file needs.

    Attributes
    ----------
    name
        The skeleton's ``:name``.
    dofs
        Bone name -> its degrees of freedom in file order (lower case, e.g. ``("rx", "ry", "rz")``); the
        root first, with the channels of its ``order`` line. Bones without degrees of freedom are left out.
    limits
        Bone name -> ``(lower, upper)`` limit per degree of freedom, where the skeleton gives them.
    angle_unit
        ``"deg"`` or ``"rad"`` (from ``:units``).
    """

    name: str
    dofs: dict[str, tuple[str, ...]]
    limits: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    angle_unit: str = "deg"

    def feature_names(self, *, include_root_translation: bool = False) -> list[tuple[str, str]]:
        """``(joint, dof)`` of every recorded channel, in skeleton order (root translation optional)."""
        out = []
        for bone, dofs in self.dofs.items():
            for dof in dofs:
                if bone == "root" and dof in _ROOT_TRANSLATION and not include_root_translation:
                    continue
                out.append((bone, dof))
        return out


def _read_lines(path: str | os.PathLike[str]) -> list[str]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; pass the path of an existing .asf/.amc file.")
    return path.read_text(encoding="utf-8", errors="replace").splitlines()


def parse_asf(path: str | os.PathLike[str]) -> AsfSkeleton:
    r"""Read an Acclaim ``.asf`` skeleton: the root's channels and each bone's degrees of freedom.

    Parameters
    ----------
    path
        The ``.asf`` file.

    Returns
    -------
    AsfSkeleton
        Bone -> degrees of freedom (and limits), in the file's order, root first.

    Raises
    ------
    ValueError
        When the file has no ``:root`` or ``:bonedata`` section, or a bone has no name.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> text = ":name demo\n:root\n order TX TY TZ RX RY RZ\n:bonedata\n begin\n  name knee\n  dof rx\n end\n"
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "demo.asf"
    >>> _ = p.write_text(text)
    >>> parse_asf(p).dofs
    {'root': ('tx', 'ty', 'tz', 'rx', 'ry', 'rz'), 'knee': ('rx',)}
    """
    lines = _read_lines(path)
    section, name, unit = "", "", "deg"
    dofs: dict[str, tuple[str, ...]] = {}
    limits: dict[str, list[tuple[float, float]]] = {}
    seen = set()
    bone: dict[str, object] | None = None
    in_limits = False
    for raw in lines:
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith(":"):
            key, _, rest = line[1:].partition(" ")
            section = key.lower()
            seen.add(section)
            if section == "name":
                name = rest.strip()
            continue
        tokens = line.split()
        head = tokens[0].lower()
        if section == "units" and head == "angle" and len(tokens) > 1:
            unit = tokens[1].lower()
        elif section == "root" and head == "order":
            dofs["root"] = tuple(t.lower() for t in tokens[1:])
        elif section == "bonedata":
            if head == "begin":
                bone, in_limits = {"dof": ()}, False
            elif head == "end":
                if bone is None or "name" not in bone:
                    raise ValueError(f"{path}: a bone in :bonedata has no 'name' line.")
                if bone["dof"]:
                    dofs[str(bone["name"])] = bone["dof"]  # type: ignore[assignment]
                    if bone.get("limits"):
                        limits[str(bone["name"])] = bone["limits"]  # type: ignore[assignment]
                bone, in_limits = None, False
            elif bone is not None:
                if head == "name":
                    bone["name"] = tokens[1]
                    in_limits = False
                elif head == "dof":
                    bone["dof"] = tuple(t.lower() for t in tokens[1:])
                    in_limits = False
                elif head == "limits" or (in_limits and line.startswith("(")):
                    in_limits = True
                    values = [float(v) for v in re.findall(r"[-+]?[\d.]+(?:[eE][-+]?\d+)?", line)]
                    bone.setdefault("limits", []).append((values[0], values[1]))  # type: ignore[union-attr]
                else:
                    in_limits = False
    if "root" not in seen or "root" not in dofs:
        raise ValueError(f"{path}: no ':root' section with an 'order' line; is this an ASF skeleton file?")
    if "bonedata" not in seen:
        raise ValueError(f"{path}: no ':bonedata' section; is this an ASF skeleton file?")
    return AsfSkeleton(name=name, dofs=dofs, limits=limits, angle_unit=unit)


def parse_amc(
    path: str | os.PathLike[str], skeleton: AsfSkeleton, *, include_root_translation: bool = False
) -> np.ndarray:
    r"""Read an Acclaim ``.amc`` motion file into a frames x channels array.

    Parameters
    ----------
    path
        The ``.amc`` file.
    skeleton
        Its skeleton (:func:`parse_asf`): fixes the channels and their order
        (:meth:`AsfSkeleton.feature_names`).
    include_root_translation
        Keep the root's ``TX TY TZ`` (default: left out, as in oi-VAE).

    Returns
    -------
    numpy.ndarray
        ``(n_frames, n_channels)`` float64, frames in file order.

    Raises
    ------
    ValueError
        When a frame lacks a bone of the skeleton, a bone line has the wrong number of values, a bone is not
        in the skeleton, or the file has no frames.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> asf = ":root\n order TX TY TZ RX RY RZ\n:bonedata\n begin\n name knee\n dof rx\n end\n"
    >>> _ = (d / "s.asf").write_text(asf)
    >>> _ = (d / "m.amc").write_text(":DEGREES\n1\nroot 0 0 0 1 2 3\nknee 40\n2\nroot 0 0 0 4 5 6\nknee 41\n")
    >>> parse_amc(d / "m.amc", parse_asf(d / "s.asf"))
    array([[ 1.,  2.,  3., 40.],
           [ 4.,  5.,  6., 41.]])
    """
    channels = skeleton.feature_names(include_root_translation=True)
    position = {key: i for i, key in enumerate(channels)}
    frames: list[np.ndarray] = []
    filled: np.ndarray | None = None
    current: np.ndarray | None = None

    def close_frame() -> None:
        if current is None:
            return
        if not filled.all():  # type: ignore[union-attr]
            missing = sorted({channels[i][0] for i in np.flatnonzero(~filled)})  # type: ignore[arg-type]
            raise ValueError(f"{path}: frame {len(frames) + 1} lacks the bones {missing} of the skeleton.")
        frames.append(current)

    for raw in _read_lines(path):
        line = raw.strip()
        if not line or line.startswith(("#", ":")):
            continue
        tokens = line.split()
        if len(tokens) == 1 and tokens[0].isdigit():
            close_frame()
            current = np.zeros(len(channels))
            filled = np.zeros(len(channels), dtype=bool)
            continue
        if current is None:
            raise ValueError(f"{path}: bone values before the first frame number: {line[:40]!r}.")
        bone = tokens[0]
        if bone not in skeleton.dofs:
            raise ValueError(f"{path}: bone {bone!r} is not in the skeleton; use the .asf of the same subject.")
        dofs = skeleton.dofs[bone]
        if len(tokens) - 1 != len(dofs):
            raise ValueError(f"{path}: bone {bone!r} has {len(tokens) - 1} values, the skeleton gives {len(dofs)}.")
        for dof, value in zip(dofs, tokens[1:], strict=True):
            current[position[(bone, dof)]] = float(value)
            filled[position[(bone, dof)]] = True  # type: ignore[index]
    close_frame()
    if not frames:
        raise ValueError(f"{path}: no frames found; is this an AMC motion file?")
    out = np.vstack(frames)
    if not include_root_translation:
        keep = [i for i, (b, d) in enumerate(channels) if not (b == "root" and d in _ROOT_TRANSLATION)]
        out = out[:, keep]
    return out


@dataclass
class MocapData:
    """Joint angles of several trials, features grouped by joint.

    Attributes
    ----------
    X
        ``(n_frames, n_features)`` joint angles (degrees, as recorded), frames of all trials stacked.
    trial
        Trial number of every frame.
    joints
        Joint (group) of every feature.
    dofs
        Degree of freedom of every feature (``"rx"`` ...).
    skeleton
        The parsed skeleton.
    """

    X: np.ndarray
    trial: np.ndarray
    joints: np.ndarray
    dofs: np.ndarray
    skeleton: AsfSkeleton

    @property
    def feature_names(self) -> list[str]:
        """``"joint_dof"`` of every feature."""
        return [f"{j}_{d}" for j, d in zip(self.joints, self.dofs, strict=True)]


def load_cmu_mocap(trials: Sequence[int] | None = None, *, include_root_translation: bool = False) -> MocapData:
    """Load CMU motion-capture subject 07's walking trials (registry ``"cmu_mocap07"``) via :func:`fetch`.

    Parameters
    ----------
    trials
        Trial numbers (default: all at hand, :data:`CMU07_TRIALS`: 01-03 and 05-11; 04 and 12 are missing).
    include_root_translation
        Keep the root's position (default: only the 59 joint angles of 29 joints, as in oi-VAE).

    Returns
    -------
    MocapData
        Frames of the trials in the order given, features grouped by joint.

    Raises
    ------
    ValueError
        For a trial that is not at hand.

    Examples
    --------
    >>> data = load_cmu_mocap([1, 11])  # doctest: +SKIP
    >>> data.X.shape, len(set(data.joints))  # doctest: +SKIP
    ((631, 59), 29)
    """
    trials = list(CMU07_TRIALS if trials is None else trials)
    bad = [t for t in trials if t not in CMU07_TRIALS]
    if bad or not trials:
        raise ValueError(f"trials {bad or trials} not available; subject 07 has trials {list(CMU07_TRIALS)} at hand.")
    names = ["07-walk.asf", *[f"07_{t:02d}.amc" for t in trials]]
    paths = {Path(k).name: v for k, v in fetch(_DATASET, names).items()}
    skeleton = parse_asf(paths["07-walk.asf"])
    blocks = [
        parse_amc(paths[f"07_{t:02d}.amc"], skeleton, include_root_translation=include_root_translation) for t in trials
    ]
    features = skeleton.feature_names(include_root_translation=include_root_translation)
    return MocapData(
        X=np.vstack(blocks),
        trial=np.concatenate([np.full(len(b), t) for t, b in zip(trials, blocks, strict=True)]),
        joints=np.array([j for j, _ in features]),
        dofs=np.array([d for _, d in features]),
        skeleton=skeleton,
    )
