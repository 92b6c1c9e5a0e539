"""The lanes' cross-validation: the same cells on the UML and QEMU TCG lanes (analysis/crossval.py)."""
