"""The fit runner: a fit's passes over X, their checkpoints, and the work folder of store-backed fits."""
