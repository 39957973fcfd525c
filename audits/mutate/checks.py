"""Audit sections of the quick profile as stand-alone, fail-fast checks.

``python -m audits.mutate.checks NAME`` (run by the mutation runner inside the mutated
copy, so every import resolves to the copy) exits 0 when the section passes and 1 at
the first failing item, printing ``KILLED-BY: <item>`` on stdout:

* ``mechanisms``: the empirical audits of the real primitives
  (:func:`audits.suite.mechanism_items`, quick profile sizes, the same seeds and
  per-item level as ``dpcg audit --quick``);
* ``sensitivity`` / ``sensitivity:<statistic>``: the sensitivity audits of the
  registered statistics (quick effort), all or the named one (both relations);
* ``accountant``: the metamorphic checks of :mod:`audits.accountant`;
* ``filter``: the checks of the real filter/session/costs in :mod:`audits.filter_audit`.
"""

from __future__ import annotations

import sys

SEED = 20261122


def _fail(item: str) -> int:
    print(f"KILLED-BY: {item}", flush=True)
    return 1


def run_mechanisms() -> int:
    from audits import suite
    from audits.empirical import audit

    profile = suite.quick_profile()
    notes: list[str] = []
    items = suite.mechanism_items(notes)
    # the per-item level of the whole quick suite (Bonferroni over all its items)
    m = len(items) + len(suite.reference_items()) + len(suite.mutant_items()) + len(
        suite.algorithm_items(notes))
    alpha_each = profile.alpha / m
    for j, it in enumerate(items):
        n_sel = max(int(profile.n_selection * it.scale), 1000)
        n_fresh = max(int(profile.n_fresh * it.scale), 1000)
        r = audit(it.name, it.sampler, it.pair.d, it.pair.d_prime,
                  declared_epsilon=it.declared_epsilon, declared_delta=it.declared_delta,
                  n_selection=n_sel, n_fresh=n_fresh, alpha=alpha_each, seed=SEED + j)
        print(f"{it.name}: eps_lb {r.epsilon_lb:.4f} vs declared {it.declared_epsilon:.4g}",
              flush=True)
        if r.exceeds:
            return _fail(f"audit mechanisms: {it.name} (eps_lb {r.epsilon_lb:.3f} > "
                         f"declared {it.declared_epsilon:.3g})")
    return 0


def run_sensitivity(statistic: str | None) -> int:
    import dpcg.citests.continuous_specs
    import dpcg.citests.private
    import dpcg.stats  # noqa: F401
    from audits import sensitivity as sens
    from dpcg.stats.registry import all_specs

    specs = [s for s in all_specs() if statistic is None or s.name == statistic]
    if not specs:
        return _fail(f"audit sensitivity: no registered statistic {statistic!r}")
    for j, spec in enumerate(all_specs()):
        if spec not in specs:
            continue
        r = sens.audit_spec(spec, sens.CASES[spec.name], sens.QUICK, SEED + 1000 * j)
        print(f"{r.name} ({r.relation}): tightness {r.max_ratio:.3f}", flush=True)
        if r.violated:
            return _fail(f"audit sensitivity: {r.name} ({r.relation}) gap {r.max_gap:.4g} = "
                         f"{r.max_ratio:.2f} x declared")
    return 0


def _run_checks(label: str, results: object) -> int:
    for c in results:  # type: ignore[attr-defined]
        print(f"{c.name}: {'pass' if c.passed else 'FAIL'}", flush=True)
        if not c.passed:
            return _fail(f"audit {label}: {c.name}")
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    name = argv[0]
    if name == "mechanisms":
        return run_mechanisms()
    if name == "sensitivity" or name.startswith("sensitivity:"):
        return run_sensitivity(name.partition(":")[2] or None)
    if name == "accountant":
        from audits.accountant import run_all

        return _run_checks("accountant", run_all())
    if name == "filter":
        from audits.filter_audit import run_all as run_filter

        return _run_checks("filter", run_filter())
    print(f"unknown check {name!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
