"""dpcg: differentially private causal graph discovery on audited primitives."""

__version__ = "0.1.0"
