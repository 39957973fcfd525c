"""The one discovery pipeline (``dpcg discover`` and :func:`dpcg.discover` build a
:class:`~dpcg.pipeline.request.DiscoverRequest` and call
:func:`~dpcg.pipeline.run.execute`).

* :mod:`dpcg.pipeline.request`: the request and its one constraint table.
* :mod:`dpcg.pipeline.data`: one resolution of the data to a Dataset or a table engine.
* :mod:`dpcg.pipeline.choose`: what the schema chooses (``--algorithm auto``, pc's test).
* :mod:`dpcg.pipeline.run`: the run.
* :mod:`dpcg.pipeline.result`: :class:`DiscoveryResult` and the ``result.json`` shape.
"""
