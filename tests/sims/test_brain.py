"""Simulated brain scans (wideml.sims.brain): regions, noise scale, effect, determinism."""

from __future__ import annotations

import numpy as np
import pytest

from adversarial.harness import assert_api_refused
from wideml.exceptions import WidemlError
from wideml.sims.brain import BrainSimulation, spheres

GRID = (40, 40, 40)


def _space():
    affine = np.diag([2.0, 2.0, 2.0, 1.0])
    affine[:3, 3] = [-40.0, -40.0, -40.0]
    ijk = np.stack(np.meshgrid(*[np.arange(s) for s in GRID], indexing="ij"), axis=-1)
    world = ijk * 2.0 - 40.0
    mask = (world**2).sum(-1) <= 36.0**2  # a ball 'brain'
    return mask, affine, world


def test_spheres_equal_the_distance_oracle():
    mask, affine, world = _space()
    centres = [(-10.0, 4.0, 0.0), (12.0, -6.0, 8.0)]
    got = spheres(mask, affine, centres, radius_mm=7.0)
    want = np.zeros(GRID, bool)
    for c in centres:
        want |= ((world - np.asarray(c)) ** 2).sum(-1) <= 49.0
    np.testing.assert_array_equal(got, want & mask)
    assert got.sum() > 50


def test_subjects_have_unit_noise_the_effect_and_nothing_outside_the_mask():
    mask, affine, _ = _space()
    regions = spheres(mask, affine, [(0.0, 0.0, 0.0)], radius_mm=10.0)
    sim = BrainSimulation(mask, affine, regions, effect=2.0, sigma_mm=4.0, baseline=50.0, seed=7)
    vols = np.stack([sim.subject(i, g) for i, g in enumerate(sim.group(8))])
    assert vols.dtype == np.float32 and not vols[:, ~mask].any()
    inner = mask & ~regions
    assert abs(vols[:, inner].mean() - 50.0) < 0.1
    assert 0.85 < vols[:, inner].std() < 1.1  # unit-variance smooth noise (edges of the ball lose a little)
    diff = vols[1::2][:, regions].mean() - vols[0::2][:, regions].mean()
    assert abs(diff - 2.0) < 0.4
    np.testing.assert_array_equal(sim.subject(3, 1), vols[3])  # the same subject again: same values


def test_a_centre_outside_the_brain_is_refused():
    mask, affine, _ = _space()
    with pytest.raises(WidemlError) as exc:
        spheres(mask, affine, [(0.0, 0.0, 0.0), (39.0, 39.0, 39.0)], radius_mm=3.0)
    assert_api_refused(exc, "(39.0, 39.0, 39.0)", "mask")
