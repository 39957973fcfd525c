"""Audits: sensitivity property tests, empirical privacy-loss checks, mutants, report."""
