"""A kernel's KPCA basis: from one pass's products to coordinates (in-memory algebra, no pass over X)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wideml.algebra.kernels import Kernel, kernel_from_dict
from wideml.algebra.kpca import KPCAFit, fit_kpca
from wideml.estimators.kernel.products import Products


@dataclass
class KernelBasis:
    """A kernel, its KPCA and the offset that centres Nystrom coordinates: maps kernel rows to coordinates."""

    kernel: object
    kpca: KPCAFit
    offset: np.ndarray

    def coordinates(self, products: Products) -> np.ndarray:
        """KPCA coordinates (m x r) of samples from their products against the reference rows."""
        return self.kpca.transform(products.kernel(self.kernel)) - self.offset

    def state(self) -> tuple[dict, dict]:
        st = {"kernel": self.kernel.to_dict(), "grand_mean": float(self.kpca.grand_mean), "n_nonzero": self.kpca.n_nonzero,
              "clipped": float(self.kpca.clipped)}
        arrays = {"kpca_eigenvalues": self.kpca.eigenvalues, "kpca_vectors": self.kpca.vectors,
                  "kpca_col_means": self.kpca.col_means, "kpca_offset": self.offset}
        return st, arrays

    @classmethod
    def from_state(cls, state: dict, arrays: dict) -> "KernelBasis":
        fit = KPCAFit(eigenvalues=np.asarray(arrays["kpca_eigenvalues"][...]), vectors=np.asarray(arrays["kpca_vectors"][...]),
                      col_means=np.asarray(arrays["kpca_col_means"][...]), grand_mean=float(state["grand_mean"]),
                      n_nonzero=int(state["n_nonzero"]), clipped=float(state["clipped"]))
        return cls(kernel_from_dict(state["kernel"]), fit, np.asarray(arrays["kpca_offset"][...]))


def fit_basis(kernel, products: Products, n_components: int | None, tol: float, at_most: bool = False) -> tuple[KernelBasis, np.ndarray]:
    """KPCA of the reference block, and the training coordinates (n x r).

    Exact (landmarks None): the coordinates are V L^{1/2}. Nystrom: the KPCA of
    the landmarks' kernel maps every training row, and the coordinates are then
    centred on the training mean (an approximation of the exact KPCA).
    """
    block = products.reference_block()
    fit = fit_kpca(block.kernel(kernel), n_components, tol=tol, at_most=at_most)
    if products.landmarks is None:
        return KernelBasis(kernel, fit, np.zeros(fit.n_components)), fit.train_coordinates()
    F = fit.transform(products.kernel(kernel))
    offset = F.mean(axis=0)
    return KernelBasis(kernel, fit, offset), F - offset


def make_kernel(kind: str, sigma: float, degree: int, coef0: float, gamma: float | None) -> Kernel:
    return Kernel(kind, sigma=sigma, degree=degree, coef0=coef0, gamma=gamma)


__all__ = ["KernelBasis", "fit_basis", "make_kernel"]
