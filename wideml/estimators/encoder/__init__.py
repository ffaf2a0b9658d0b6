"""The multi-kernel encoder classifier (Shen, "Fast and Scalable Multi-Kernel Encoder Classifier")."""
