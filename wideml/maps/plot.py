"""PNG panels of feature-space maps: nilearn's ``plot_stat_map`` when installed, else matplotlib.

A map in image space is drawn as three orthogonal slices through the voxel
of largest |value| plus a row of axial slices; a map without a spatial
reference as its values against the feature index. Colours are symmetric
around 0 (red positive, blue negative: with the sign convention of
:mod:`wideml.maps.model_maps`, red = higher in the second class).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from wideml.exceptions import ConfigError

PLOTTERS = ("auto", "nilearn", "matplotlib")
#: Axial slices in the lower row of an image panel.
N_AXIAL = 5


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
    from matplotlib.figure import Figure

    i, j, k = peak_voxel(volume)
    vmax = _limit(volume)
    axial = axial_slices(volume)
    fig = Figure(figsize=(2.2 * max(3, len(axial)), 4.8), dpi=100)
    grid = fig.add_gridspec(2, max(3, len(axial)))
    views = [(volume[i, :, :], f"x = {i} (sagittal)"), (volume[:, j, :], f"y = {j} (coronal)"), (volume[:, :, k], f"z = {k} (axial)")]
    image = None
    for col, (plane, label) in enumerate(views):
        ax = fig.add_subplot(grid[0, col])
        image = ax.imshow(plane.T, origin="lower", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(label, fontsize=8)
        ax.set_axis_off()
    for col, z in enumerate(axial):
        ax = fig.add_subplot(grid[1, col])
        ax.imshow(volume[:, :, z].T, origin="lower", cmap="RdBu_r", vmin=-vmax, vmax=vmax, interpolation="nearest")
        ax.set_title(f"z = {z}", fontsize=8)
        ax.set_axis_off()
    fig.colorbar(image, ax=fig.axes, shrink=0.6)
    fig.suptitle(f"{title} (peak |value| at voxel {(i, j, k)})", fontsize=9)
    fig.savefig(path)


def _draw_nilearn(path: Path, values: np.ndarray, spatial, title: str) -> None:
    """nilearn's stat-map display: orthogonal cuts at the peak voxel's world coordinates, then axial cuts."""
    from matplotlib.figure import Figure
    from nilearn import plotting

    img = spatial.to_image(np.asarray(values, dtype=np.float64))
    volume = np.asarray(img.dataobj)
    peak = spatial.affine @ np.array([*peak_voxel(volume), 1.0])
    fig = Figure(figsize=(10, 6), dpi=100)
    top = fig.add_axes((0.0, 0.5, 1.0, 0.45))
    low = fig.add_axes((0.0, 0.0, 1.0, 0.45))
    vmax = _limit(volume)
    plotting.plot_stat_map(img, bg_img=None, cut_coords=tuple(peak[:3]), display_mode="ortho", axes=top, figure=fig,
                           title=title, vmax=vmax, threshold=vmax * 1e-6, cmap="RdBu_r", symmetric_cbar=True)
    world_z = [float((spatial.affine @ np.array([*peak_voxel(volume)[:2], z, 1.0]))[2]) for z in axial_slices(volume)]
    plotting.plot_stat_map(img, bg_img=None, cut_coords=world_z, display_mode="z", axes=low, figure=fig, colorbar=False,
                           vmax=vmax, threshold=vmax * 1e-6, cmap="RdBu_r", symmetric_cbar=True)
    fig.savefig(path)
