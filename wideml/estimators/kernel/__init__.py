"""Kernel estimators by the KPCA trick: KernelPCA, KPCATrick (NCA, LMNN, DNE) and KernelLOL."""
