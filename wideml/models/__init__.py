"""Model files: saving and loading fitted estimators as zarr v3 groups (data, never code)."""
