"""Figures of the report as ``data:`` URIs (PNG, base64): nothing is fetched when the report is viewed.

Also the spatial reference of an image store: its mask drawn over nilearn's
MNI152 template when nilearn is installed and the mask lies in that template's
box (world millimetres), else a plain matplotlib mosaic of axial slices of the mask.
"""

from __future__ import annotations

import base64
import io

import numpy as np

from wideml.exceptions import WidemlError

#: The PNG file signature; an embedded file must start with it.
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: Largest PNG file of a maps folder embedded in the report.
MAX_EMBEDDED_BYTES = 20 << 20
#: World bounding box (mm) of nilearn's MNI152 template: a mask whose centre lies inside is drawn over it.
MNI_BOX = ((-91.0, 91.0), (-126.0, 91.0), (-72.0, 109.0))
#: Axial slices of the matplotlib mask mosaic.
MOSAIC_SLICES = 12


def pyplot():
    """matplotlib's pyplot on the Agg backend, or one sentence naming the extra to install."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise WidemlError("the report draws its figures with matplotlib; install it with `pip install wideml[report]`.") from None
    return plt


def png_uri(data: bytes) -> str:
    """``data:image/png;base64,...`` of PNG bytes (refused unless they start with the PNG signature)."""
    if not data.startswith(PNG_SIGNATURE):
        raise WidemlError("an image for the report is not a PNG file; give the folder `wideml maps` wrote.")
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def figure_uri(fig, dpi: int = 100) -> str:
    """Render a matplotlib figure to a PNG ``data:`` URI and close it."""
    plt = pyplot()
    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return png_uri(buffer.getvalue())


def _in_mni_box(spatial, mask: np.ndarray) -> bool:
    """Whether the centre of the mask's voxels, in world millimetres, lies in :data:`MNI_BOX`."""
    voxels = np.argwhere(mask)
    if not len(voxels):
        return False
    centre = spatial.affine @ np.append(voxels.mean(axis=0), 1.0)
    return all(lo <= c <= hi for c, (lo, hi) in zip(centre[:3], MNI_BOX))


def mask_figure(spatial) -> tuple[str, str]:
    """The mask of an image store as a PNG ``data:`` URI, and a caption saying how it was drawn.

    Parameters
    ----------
    spatial : SpatialReference
        The store's voxel grid, affine and mask (None: every voxel of the grid is a feature).

    Returns
    -------
    (str, str)
        The URI and the caption.
    """
    mask = spatial.mask if spatial.mask is not None else np.ones(spatial.grid_shape, dtype=bool)
    if _nilearn_ready() and _in_mni_box(spatial, mask):
        return _nilearn_mask(spatial, mask), ("the mask (features) over nilearn's MNI152 template, world coordinates "
                                              "in mm; the template is meaningful only for scans in MNI space")
    return _mosaic(mask), f"the mask (white: features), {min(MOSAIC_SLICES, mask.shape[2])} axial slices of the voxel grid"


def _nilearn_ready() -> bool:
    try:
        import nibabel  # noqa: F401
        import nilearn.plotting  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure: draw with matplotlib
        return False
    return True


def _nilearn_mask(spatial, mask: np.ndarray) -> str:
    import nibabel as nib
    from nilearn import datasets, plotting

    plt = pyplot()
    img = nib.Nifti1Image(mask.astype(np.uint8), spatial.affine)
    fig = plt.figure(figsize=(8, 3))
    plotting.plot_roi(img, bg_img=datasets.load_mni152_template(), figure=fig, display_mode="ortho",
                      draw_cross=False, cmap="autumn", alpha=0.8)
    return figure_uri(fig)


def _mosaic(mask: np.ndarray) -> str:
    plt = pyplot()
    depth = mask.shape[2]
    ks = np.unique(np.linspace(0, depth - 1, min(MOSAIC_SLICES, depth)).round().astype(int))
    cols = min(6, len(ks))
    rows = -(-len(ks) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.6 * cols, 1.7 * rows), squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")
    for ax, k in zip(axes.ravel(), ks):
        ax.imshow(mask[:, :, k].T, origin="lower", cmap="gray", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"k = {k}", fontsize=8)
    fig.tight_layout()
    return figure_uri(fig)

