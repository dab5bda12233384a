"""SMDDP's PyTorch APIs: the ``smddp`` backend (``torch_smddp``) and the older ``distributed`` and ``parallel``
modules."""
