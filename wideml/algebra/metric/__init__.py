"""Mahalanobis metric learners on small in-memory matrices (numpy/scipy only).

- :mod:`.nca`: NCA objective and gradient (the estimator uses scikit-learn's NCA);
- :mod:`.lmnn`: LMNN (Weinberger et al.), hinge objective minimised over L with L-BFGS;
- :mod:`.dne`: DNE (Zhang et al.), a +-1 neighbour graph and one eigen-solve;
- :mod:`.knca`: kernel-trick KNCA and KDNE, kept as test oracles for the KPCA trick.
"""

from wideml.algebra.metric.dne import dne_graph, fit_dne
from wideml.algebra.metric.lmnn import fit_lmnn, lmnn_loss_grad, target_neighbors
from wideml.algebra.metric.nca import nca_loss_grad
from wideml.algebra.metric.neighbors import pairwise_sq_dist

__all__ = ["dne_graph", "fit_dne", "fit_lmnn", "lmnn_loss_grad", "nca_loss_grad", "pairwise_sq_dist", "target_neighbors"]
