"""Simulated brain scans: spatially smooth noise in a brain mask plus a class effect in a few spherical regions.

Used by ``benchmarks/scale/neuro_sim.py`` (subjects in the MNI152 1 mm brain mask)
and by tests on a tiny grid. Each subject is made on its own from its seed
(``seed``, subject index), so memory is a few grid-sized arrays whatever n.

Model of subject ``s`` with group ``g_s`` in {0, 1}::

    volume_s = baseline + smooth(white noise) / sd  +  effect * g_s * regions     (inside the mask, 0 outside)

where ``smooth`` is a Gaussian filter of ``sigma_mm`` millimetres (so the noise
has unit variance and a spatial correlation of a few voxels) and ``regions`` is
the union of spheres of ``radius_mm`` around the given world coordinates,
clipped to the mask.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import gaussian_filter

from wideml.exceptions import WidemlError


#: Default region centres in MNI millimetres: left precentral gyrus, right lateral occipital cortex, anterior cingulate.
DEFAULT_CENTRES_MM = ((-38.0, -20.0, 54.0), (34.0, -82.0, 4.0), (2.0, 30.0, 24.0))


@dataclass(frozen=True)
class BrainSimulation:
    """The fixed parts of a simulation: the space, the mask, the true regions and the noise/effect sizes.

    Attributes
    ----------
    mask : ndarray of bool, shape (X, Y, Z)
    affine : ndarray of shape (4, 4)
    regions : ndarray of bool, shape (X, Y, Z)
        Voxels carrying the class effect (inside ``mask``).
    effect : float
        Mean difference between the groups inside the regions, in noise sds.
    sigma_mm : float
        Gaussian smoothing of the noise (sd of the kernel, millimetres).
    baseline : float
        Mean intensity inside the mask.
    seed : int
    """

    mask: np.ndarray
    affine: np.ndarray
    regions: np.ndarray
    effect: float = 0.5
    sigma_mm: float = 4.0
    baseline: float = 100.0
    seed: int = 0

    @property
    def zooms(self) -> np.ndarray:
        """Voxel sizes in millimetres (column norms of the affine), shape (3,)."""
        return np.sqrt((np.asarray(self.affine)[:3, :3] ** 2).sum(axis=0))

    def group(self, n: int) -> np.ndarray:
        """Groups of subjects 0..n-1: alternating 0, 1 (balanced), shape (n,)."""
        return np.arange(n) % 2

    def subject(self, index: int, group: int) -> np.ndarray:
        """The float32 volume of subject ``index`` (grid-shaped; 0 outside the mask)."""
        rng = np.random.default_rng([self.seed, int(index)])
        noise = rng.standard_normal(self.mask.shape, dtype=np.float32)
        sigma_vox = [float(self.sigma_mm) / float(z) for z in self.zooms]
        smooth = gaussian_filter(noise, sigma=sigma_vox, mode="constant")
        smooth /= _smoothed_sd(sigma_vox)
        vol = np.float32(self.baseline) + smooth
        if group:
            vol[self.regions] += np.float32(self.effect)
        vol[~self.mask] = 0
        return vol


def _smoothed_sd(sigma_vox) -> float:
    """sd of unit white noise after a separable Gaussian filter (product over axes of (sum of squared taps)^1/2)."""
    sd = 1.0
    for s in sigma_vox:
        radius = int(4.0 * s + 0.5)
        x = np.arange(-radius, radius + 1, dtype=np.float64)
        taps = np.exp(-0.5 * (x / s) ** 2)
        taps /= taps.sum()
        sd *= float(np.sqrt((taps**2).sum()))
    return sd


def spheres(mask: np.ndarray, affine: np.ndarray, centres_mm, radius_mm: float) -> np.ndarray:
    """Voxels of ``mask`` within ``radius_mm`` of any centre (world coordinates), shape ``mask.shape``.

    Raises
    ------
    WidemlError
        A centre whose sphere has no voxel inside the mask.
    """
    affine = np.asarray(affine, dtype=np.float64)
    inverse = np.linalg.inv(affine)
    zooms = np.sqrt((affine[:3, :3] ** 2).sum(axis=0))
    out = np.zeros(mask.shape, dtype=bool)
    for centre in centres_mm:
        ijk = inverse @ np.r_[np.asarray(centre, dtype=np.float64), 1.0]
        half = np.ceil(radius_mm / zooms).astype(int) + 1
        lo = np.maximum(np.floor(ijk[:3]).astype(int) - half, 0)
        hi = np.minimum(np.ceil(ijk[:3]).astype(int) + half + 1, mask.shape)
        if np.any(hi <= lo):
            raise WidemlError(f"region centre {tuple(centre)} mm lies outside the grid; give centres inside the brain.")
        idx = np.stack(np.meshgrid(*[np.arange(a, b) for a, b in zip(lo, hi)], indexing="ij"), axis=-1)
        world = idx @ affine[:3, :3].T + affine[:3, 3]
        inside = ((world - np.asarray(centre)) ** 2).sum(axis=-1) <= radius_mm**2
        block = out[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        block |= inside & mask[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        if not (inside & mask[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]).any():
            raise WidemlError(f"region centre {tuple(centre)} mm has no voxel inside the mask; give centres inside the brain.")
    return out
