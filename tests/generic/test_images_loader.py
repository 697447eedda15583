"""Loaders of the image data sets (scsparse.generic.datasets._images)."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from scsparse.generic.datasets import fashion_mnist, olshausen_images, sample_patches, smiley
from scsparse.generic.datasets._images import read_hips_header, read_idx


def test_olshausen_images_shape_and_scale(shared_data):
    images = olshausen_images()
    assert images.shape == (10, 512, 512) and images.dtype == np.float32
    assert abs(float(images.var()) - 0.0791) < 2e-3  # the manifest's overall variance
    assert abs(float(images[9].std()) - 0.118) < 2e-3  # image9 has the smallest spread


def test_sample_patches_are_image_regions():
    images = np.arange(3 * 10 * 12, dtype=np.float32).reshape(3, 10, 12)
    patches = sample_patches(images, 50, patch_size=4, seed=1)
    assert patches.shape == (50, 16)
    for row in patches[:10]:
        block = row.reshape(4, 4)
        img = int(block[0, 0] // 120)
        r, c = divmod(int(block[0, 0]) % 120, 12)
        np.testing.assert_array_equal(block, images[img, r : r + 4, c : c + 4])
    np.testing.assert_array_equal(patches, sample_patches(images, 50, patch_size=4, seed=1))
    assert not np.array_equal(patches, sample_patches(images, 50, patch_size=4, seed=2))
    only_first = sample_patches(images, 20, patch_size=4, image_ids=[0])
    assert (only_first < 120).all()


def test_sample_patches_rejects_bad_input():
    with pytest.raises(ValueError, match="patch_size"):
        sample_patches(np.zeros((1, 8, 8)), 5, patch_size=9)
    with pytest.raises(ValueError, match="3-d"):
        sample_patches(np.zeros((8, 8)), 5)
    with pytest.raises(ValueError, match="n_patches"):
        sample_patches(np.zeros((1, 8, 8)), 0, patch_size=4)


def test_hips_header(tmp_path):
    good = tmp_path / "header"
    good.write_text("\n\n1\n\n64\n32\n32\n0\n3\ngenheader\n\n.\n")
    assert read_hips_header(good) == {"n_frames": 1, "rows": 64, "cols": 32, "bits_per_pixel": 32, "pixel_format": 3}
    bad = tmp_path / "bad"
    bad.write_text("not a header")
    with pytest.raises(ValueError, match="HIPS"):
        read_hips_header(bad)
    wrong_format = tmp_path / "byte"
    wrong_format.write_text("\n\n1\n\n64\n32\n8\n0\n0\n.\n")
    with pytest.raises(ValueError, match="32-bit float"):
        read_hips_header(wrong_format)


def test_read_idx_roundtrip_and_errors(tmp_path):
    arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    header = bytes([0, 0, 0x08, 3]) + b"".join(int(d).to_bytes(4, "big") for d in arr.shape)
    p = tmp_path / "x-idx3-ubyte.gz"
    with gzip.open(p, "wb") as fh:
        fh.write(header + arr.tobytes())
    np.testing.assert_array_equal(read_idx(p), arr)
    plain = tmp_path / "y-idx3-ubyte"
    plain.write_bytes(header + arr.tobytes()[:-1])
    with pytest.raises(ValueError, match="holds 23 values"):
        read_idx(plain)
    junk = tmp_path / "junk"
    junk.write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="magic"):
        read_idx(junk)


def test_fashion_mnist_test_split(shared_data):
    images, labels = fashion_mnist("test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    assert set(np.unique(labels)) == set(range(10)) and np.bincount(labels).tolist() == [1000] * 10
    with pytest.raises(ValueError, match="split"):
        fashion_mnist("validation")


def test_smiley_arrays(shared_data):
    images, presence, values = smiley()
    assert images.shape == (20000, 1024) and presence.shape == (20000, 18) and values.shape == (20000, 18)
    assert set(np.unique(images)) == {0, 1} and set(np.unique(presence)) == {0, 1}
    assert 0.3 < presence.mean() < 0.7  # attribute presence probability 0.5
