"""PNG panels of feature-space maps: nilearn's ``plot_stat_map`` when installed, else matplotlib.

A map in image space is drawn as three orthogonal slices through the voxel
of largest |value| plus a row of axial slices; a map without a spatial
reference as its values against the feature index. Colours are symmetric
around 0 (red positive, blue negative: with the sign convention of
:mod:`wideml.maps.model_maps`, red = higher in the second class).

Maps are fed block by block (:class:`VectorPanel`, :class:`ImagePanel`). A
small map (at most :data:`PLOT_WHOLE_FEATURES` features, and a grid of at most
:data:`PLOT_WHOLE_VOXELS` voxels) is kept and drawn whole, as :func:`draw_panel`
draws it. A larger one is drawn from bounded summaries: against the feature
index as the min/max envelope of :data:`ENVELOPE_BINS` bins plus its top 10
points; in image space from the planes through the peak and the axial planes,
taken from the NIfTI writer's slabs (:class:`wideml.maps.files.NiftiStream`),
and for nilearn from a volume subsampled to at most :data:`PLOT_SUBSAMPLE_VOXELS`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError
from wideml.maps.blocks import TopN
from wideml.storage.spatial import require_nibabel

PLOTTERS = ("auto", "nilearn", "matplotlib")
#: Axial slices in the lower row of an image panel.
N_AXIAL = 5
#: Maps of at most this many features (and grids of at most PLOT_WHOLE_VOXELS voxels) are drawn from the whole vector.
PLOT_WHOLE_FEATURES = 1 << 16
PLOT_WHOLE_VOXELS = 1 << 22
#: Bins of the min/max envelope of a large map drawn against the feature index.
ENVELOPE_BINS = 2000
#: Voxels of the subsampled volume nilearn draws for a large image-space map.
PLOT_SUBSAMPLE_VOXELS = 1 << 21


def nilearn_available() -> bool:
    """Whether nilearn's plotting can be imported (it is optional)."""
    try:
        import nilearn.plotting  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means: use matplotlib
        return False
    return True


def resolve_plotter(plot: str | None) -> str | None:
    """The plotter to use: None (no PNG), "nilearn" or "matplotlib"; "auto" prefers nilearn when installed, and is None without matplotlib."""
    if plot is None:
        return None
    if plot not in PLOTTERS:
        raise ConfigError(f"plot={plot!r} is not one of {', '.join(map(repr, PLOTTERS))} or None.")
    if not matplotlib_available():
        if plot == "auto":
            return None  # write_maps says so in the manifest
        raise ConfigError(f"plot={plot!r} needs matplotlib; install it with `pip install wideml[plot]` (or pass plot=None / --png none).")
    if plot == "auto":
        return "nilearn" if nilearn_available() else "matplotlib"
    if plot == "nilearn" and not nilearn_available():
        raise ConfigError("plot='nilearn' needs nilearn; install it (pip install nilearn) or use plot='matplotlib'.")
    return plot


def matplotlib_available() -> bool:
    """Whether matplotlib (the ``plot`` extra) can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def peak_voxel(volume: np.ndarray) -> tuple[int, ...]:
    """Grid index of the largest |value| (the first one on ties)."""
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(np.abs(volume))), volume.shape))


def draw_panel(path: Path, values: np.ndarray, spatial, title: str, plotter: str) -> None:
    """Write a PNG panel of one map.

    Parameters
    ----------
    path : Path
        The ``.png`` file to write.
    values : ndarray of shape (n_features,)
    spatial : SpatialReference or None
    title : str
    plotter : {"nilearn", "matplotlib"}
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    if spatial is None:
        _draw_vector(path, np.asarray(values, dtype=np.float64), title)
    elif plotter == "nilearn":
        _draw_nilearn(path, values, spatial, title)
    else:
        _draw_slices(path, spatial.to_volume(np.asarray(values, dtype=np.float64)), title)


def _limit(values: np.ndarray) -> float:
    top = float(np.max(np.abs(values))) if values.size else 0.0
    return top if top > 0 else 1.0


def _draw_vector(path: Path, values: np.ndarray, title: str) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(np.arange(values.size), values, lw=0.6, color="0.3")
    top = np.argsort(-np.abs(values), kind="stable")[:10]
    ax.scatter(top, values[top], s=12, c=np.sign(values[top]), cmap="RdBu_r", vmin=-1, vmax=1, zorder=3)
    ax.axhline(0, color="0.6", lw=0.5)
    ax.set_xlabel("feature index")
    ax.set_ylabel("weight")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


def axial_slices(volume: np.ndarray) -> np.ndarray:
    """Up to N_AXIAL evenly spaced k indices inside the non-zero extent of a volume (its ends left out)."""
    nz = np.flatnonzero(np.any(volume != 0, axis=(0, 1)))
    lo, hi = (int(nz[0]), int(nz[-1])) if nz.size else (0, volume.shape[2] - 1)
    return np.unique(np.linspace(lo, hi, N_AXIAL + 2).round().astype(int)[1:-1]) if hi > lo else np.array([lo])


def _draw_slices(path: Path, volume: np.ndarray, title: str) -> None:
    """Three orthogonal slices through the peak voxel, then N_AXIAL axial slices across the non-zero extent."""
    i, j, k = peak_voxel(volume)
    axial = axial_slices(volume)
    _draw_planes(path, [volume[i, :, :], volume[:, j, :], volume[:, :, k]], [volume[:, :, z] for z in axial], (i, j, k),
                 list(axial), _limit(volume), title)


def _draw_planes(path: Path, views: list, axial_planes: list, peak: tuple, axial: list, vmax: float, title: str) -> None:
    """The slices panel from its planes: sagittal, coronal and axial through ``peak``, then the axial planes ``axial``."""
    from matplotlib.figure import Figure

    i, j, k = peak
    fig = Figure(figsize=(2.2 * max(3, len(axial)), 4.8), dpi=100)
    grid = fig.add_gridspec(2, max(3, len(axial)))
    labels = [f"x = {i} (sagittal)", f"y = {j} (coronal)", f"z = {k} (axial)"]
    image = None
    for col, (plane, label) in enumerate(zip(views, labels)):
        ax = fig.add_subplot(grid[0, col])
        image = ax.imshow(plane.T, origin="lower", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(label, fontsize=8)
        ax.set_axis_off()
    for col, (z, plane) in enumerate(zip(axial, axial_planes)):
        ax = fig.add_subplot(grid[1, col])
        ax.imshow(plane.T, origin="lower", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(f"z = {z}", fontsize=8)
        ax.set_axis_off()
    fig.colorbar(image, ax=fig.axes, shrink=0.6)
    fig.suptitle(f"{title} (peak |value| at voxel {(i, j, k)})", fontsize=9)
    fig.savefig(path)


def _draw_nilearn(path: Path, values: np.ndarray, spatial, title: str) -> None:
    """nilearn's stat-map display: orthogonal cuts at the peak voxel's world coordinates, then axial cuts."""
    img = spatial.to_image(np.asarray(values, dtype=np.float64))
    volume = np.asarray(img.dataobj)
    peak = spatial.affine @ np.array([*peak_voxel(volume), 1.0])
    world_z = [float((spatial.affine @ np.array([*peak_voxel(volume)[:2], z, 1.0]))[2]) for z in axial_slices(volume)]
    _draw_nilearn_image(path, img, tuple(peak[:3]), world_z, _limit(volume), title)


def _draw_nilearn_image(path: Path, img, peak_world: tuple, world_z: list, vmax: float, title: str) -> None:
    from matplotlib.figure import Figure
    from nilearn import plotting

    fig = Figure(figsize=(10, 6), dpi=100)
    top = fig.add_axes((0.0, 0.5, 1.0, 0.45))
    low = fig.add_axes((0.0, 0.0, 1.0, 0.45))
    plotting.plot_stat_map(img, bg_img=None, cut_coords=peak_world, display_mode="ortho", axes=top, figure=fig,
                           title=title, vmax=vmax, threshold=vmax * 1e-6, cmap="RdBu_r", symmetric_cbar=True)
    plotting.plot_stat_map(img, bg_img=None, cut_coords=world_z, display_mode="z", axes=low, figure=fig, colorbar=False,
                           vmax=vmax, threshold=vmax * 1e-6, cmap="RdBu_r", symmetric_cbar=True)
    fig.savefig(path)


def _use_agg() -> None:
    import matplotlib

    matplotlib.use("Agg", force=False)


class VectorPanel:
    """The panel of a map without a spatial reference, fed block by block (values against the feature index).

    Up to :data:`PLOT_WHOLE_FEATURES` features the blocks are kept and drawn
    as :func:`draw_panel` draws them; beyond, only the per-bin min and max of
    :data:`ENVELOPE_BINS` bins and the top 10 points are kept (memory O(bins)).
    """

    def __init__(self, n_features: int):
        self.n_features = int(n_features)
        self.whole = self.n_features <= PLOT_WHOLE_FEATURES
        self.parts: list[np.ndarray] = []
        self.width = max(1, math.ceil(self.n_features / ENVELOPE_BINS))
        bins = max(1, math.ceil(self.n_features / self.width))
        self.low, self.high = np.full(bins, np.inf), np.full(bins, -np.inf)
        self.top = TopN(10)

    def add(self, lo: int, values: np.ndarray) -> None:
        if self.whole:
            self.parts.append(np.asarray(values, dtype=np.float64))
            return
        if values.size == 0:
            return
        hi = lo + values.size
        edges = np.arange((lo // self.width + 1) * self.width, hi, self.width)
        starts = np.concatenate([[lo], edges]) - lo
        bins = (starts + lo) // self.width
        self.low[bins] = np.minimum(self.low[bins], np.minimum.reduceat(values, starts))
        self.high[bins] = np.maximum(self.high[bins], np.maximum.reduceat(values, starts))
        self.top.add(lo, values)

    def draw(self, path: Path, title: str) -> None:
        _use_agg()
        if self.whole:
            values = np.concatenate(self.parts) if self.parts else np.zeros(0)
            _draw_vector(path, values, title)
            return
        _draw_envelope(path, self.width, self.low, self.high, *self.top.result(), self.n_features, title)


def _draw_envelope(path: Path, width: int, low: np.ndarray, high: np.ndarray, top: np.ndarray, top_values: np.ndarray,
                   n_features: int, title: str) -> None:
    """Like :func:`_draw_vector` for a large map: the min-max band of each bin of ``width`` features, and the top points."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 3), dpi=100)
    ax = fig.add_subplot(1, 1, 1)
    x = np.minimum(np.arange(low.size) * width + (width - 1) / 2.0, n_features - 1)
    ax.fill_between(x, low, high, color="0.3", lw=0.6, step="mid")
    ax.scatter(top, top_values, s=12, c=np.sign(top_values), cmap="RdBu_r", vmin=-1, vmax=1, zorder=3)
    ax.axhline(0, color="0.6", lw=0.5)
    ax.set_xlabel(f"feature index (min-max per {width} features)")
    ax.set_ylabel("weight")
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path)


class ImagePanel:
    """The panel of a map in image space, fed block by block and by the NIfTI writer's slabs.

    Small maps (:data:`PLOT_WHOLE_FEATURES`, :data:`PLOT_WHOLE_VOXELS`) are kept
    and drawn by :func:`draw_panel`. For larger ones, :meth:`prepare` takes the
    peak voxel and the non-zero k-extent from the finished first phase of
    :class:`wideml.maps.files.NiftiStream`, :meth:`on_slab` keeps the planes
    through the peak, the axial planes and (nilearn) a strided subsample, and
    :meth:`draw` draws them: memory O(planes + subsample), not O(p).
    """

    def __init__(self, spatial, plotter: str):
        self.spatial, self.plotter = spatial, plotter
        self.whole = spatial.n_features <= PLOT_WHOLE_FEATURES and int(np.prod(spatial.grid_shape)) <= PLOT_WHOLE_VOXELS
        self.parts: list[np.ndarray] = []

    def add(self, lo: int, values: np.ndarray) -> None:
        if self.whole:
            self.parts.append(np.asarray(values, dtype=np.float64))

    def prepare(self, peak_flat: int, peak_abs: float, nonzero_k: np.ndarray) -> None:
        """The peak (C-order grid index, |value|) and the k-planes holding a non-zero value, from the finished first phase."""
        grid = self.spatial.grid_shape
        self.peak = tuple(int(v) for v in np.unravel_index(int(peak_flat), grid))
        self.vmax = float(peak_abs) if peak_abs > 0 else 1.0
        nz = np.flatnonzero(nonzero_k)
        lo, hi = (int(nz[0]), int(nz[-1])) if nz.size else (0, grid[2] - 1)
        self.axial = [int(z) for z in (np.unique(np.linspace(lo, hi, N_AXIAL + 2).round().astype(int)[1:-1]) if hi > lo else np.array([lo]))]
        ni, nj, nk = grid
        self.sagittal = np.zeros((nj, nk), dtype=np.float32)
        self.coronal = np.zeros((ni, nk), dtype=np.float32)
        self.planes: dict[int, np.ndarray] = {}
        self.step = max(1, math.ceil((ni * nj * nk / PLOT_SUBSAMPLE_VOXELS) ** (1 / 3))) if self.plotter == "nilearn" else 0
        if self.step:
            self.sub = np.zeros(tuple(math.ceil(n / self.step) for n in grid), dtype=np.float32)

    def on_slab(self, k0: int, slab: np.ndarray) -> None:
        """Keep what the panel needs of ``volume[:, :, k0:k0 + slab.shape[2]]``."""
        i, j, k = self.peak
        k1 = k0 + slab.shape[2]
        self.sagittal[:, k0:k1] = slab[i, :, :]
        self.coronal[:, k0:k1] = slab[:, j, :]
        for z in {k, *self.axial}:
            if k0 <= z < k1:
                self.planes[z] = np.array(slab[:, :, z - k0])
        if self.step:
            first = -(-k0 // self.step) * self.step
            for z in range(first, k1, self.step):
                self.sub[:, :, z // self.step] = slab[:: self.step, :: self.step, z - k0]

    def draw(self, path: Path, title: str) -> None:
        _use_agg()
        if self.whole:
            values = np.concatenate(self.parts) if self.parts else np.zeros(0)
            draw_panel(path, values, self.spatial, title, self.plotter)
            return
        i, j, k = self.peak
        if self.plotter == "nilearn":
            nib = require_nibabel()
            affine = self.spatial.affine @ np.diag([self.step, self.step, self.step, 1.0])
            peak = self.spatial.affine @ np.array([i, j, k, 1.0])
            world_z = [float((self.spatial.affine @ np.array([i, j, z, 1.0]))[2]) for z in self.axial]
            _draw_nilearn_image(path, nib.Nifti1Image(self.sub, affine), tuple(peak[:3]), world_z, self.vmax,
                                f"{title} (every {self.step}th voxel)" if self.step > 1 else title)
            return
        _draw_planes(path, [self.sagittal, self.coronal, self.planes[k]], [self.planes[z] for z in self.axial], self.peak,
                     self.axial, self.vmax, title)
