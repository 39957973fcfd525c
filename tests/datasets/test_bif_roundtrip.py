"""Property test: random networks written as BIF (both CPT forms) parse back unchanged."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcg.datasets import BayesianNetwork, network_from_bif, parse_bif

NAME_CHARS = st.sampled_from(list("abcXYZ019_-.+ \"'\\/{}(),;|[]*#"))
NAMES = st.text(NAME_CHARS, min_size=1, max_size=5).filter(lambda s: s.strip() == s) | (
    st.sampled_from(["table", "default", "property", "type", "variable", "probability", "3"])
)


@st.composite
def networks(draw: st.DrawFn) -> BayesianNetwork:
    p = draw(st.integers(1, 5))
    nodes = draw(st.lists(NAMES, min_size=p, max_size=p, unique=True))
    # a random topological order; parents come from earlier nodes in it, and the
    # declaration order is the given list order (not topological in general)
    topo = draw(st.permutations(nodes))
    states = {
        v: tuple(draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))) for v in nodes
    }
    parents: dict[str, tuple[str, ...]] = {}
    for i, v in enumerate(topo):
        chosen = draw(st.lists(st.sampled_from(topo[:i]), unique=True, max_size=2)) if i else []
        parents[v] = tuple(chosen)
    cpts = {}
    for v in nodes:
        shape = (*(len(states[q]) for q in parents[v]), len(states[v]))
        size = int(np.prod(shape))
        weights = np.array(draw(st.lists(st.integers(0, 9), min_size=size, max_size=size)),
                           dtype=float).reshape(shape)
        weights[..., 0] += weights.sum(axis=-1) == 0  # every row has some mass
        cpts[v] = weights / weights.sum(axis=-1, keepdims=True)
    return BayesianNetwork("random net", states, parents, cpts)


@settings(max_examples=50, deadline=None)
@given(net=networks(), form=st.sampled_from(["rows", "table"]))
def test_bif_round_trip(net: BayesianNetwork, form: str) -> None:
    text = net.to_bif(form=form)
    back = network_from_bif(parse_bif(text, "random.bif"))
    assert back.nodes == net.nodes
    assert dict(back.states) == dict(net.states)
    assert dict(back.parents) == dict(net.parents)
    for v in net.nodes:
        np.testing.assert_allclose(back.cpts[v], net.cpts[v], rtol=0, atol=1e-15)
    assert set(back.dag_edges) == set(net.dag_edges)
    sample = back.sample(50, 0)
    assert np.all(sample.codes.max(axis=1) < np.asarray(back.cardinalities))
