"""The reader's working state for one body being read (:class:`Frame`), kept apart from the facts it
records (:mod:`graphguard.analysis.facts`)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from graphguard.analysis.facts import FunctionFacts


@dataclass(eq=False, slots=True)
class Frame:
    """What the reader knows of the body it is in (a function, a class or the module): its facts, the
    names it binds, the loops and exemptions active at the current statement, and the values the TF 2
    and sweep rules follow through it. One per body on the reader's stack."""

    facts: FunctionFacts
    scope: dict
    is_class: bool = False
    class_name: str | None = None
    loops: list = field(default_factory=list)
    exempt: list = field(default_factory=list)  # frozensets of loop indices, one per active exemption
    graphs: int = 0  # ``with <graph>.as_default():`` blocks the current statement stands in
    branches: list = field(default_factory=list)  # how many loops were active at each enclosing ``if``
    tensor_params: set = field(default_factory=set)
    params: set = field(default_factory=set)
    pending_param_operators: list = field(default_factory=list)  # (construction, node it names, parameters)
    bound: dict = field(default_factory=dict)  # dotted name -> loop indices active at its last binding
    made: dict = field(default_factory=dict)  # dotted name -> Made, for names bound to model-like values
    trial_sites: set = field(default_factory=set)  # sites of the trials recorded
    used: set = field(default_factory=set)  # subjects of the made values the function uses as trials
    pending_retentions: list = field(default_factory=list)  # (Retention, subject, container, kept without a use)
    returned: set = field(default_factory=set)  # dotted names the body returns (``return models``)
    assigned: set = field(default_factory=set)  # attributes (``self.graph``) assigned in this body
    numbers: set = field(default_factory=set)  # dotted names holding a Python int or float (GG301)
    number_lists: set = field(default_factory=set)  # dotted names holding a list of Python numbers (GG301)
    counts: dict = field(default_factory=dict)  # name -> ("int", n) / ("splits", n) the source fixes, or None
    samples: set = field(default_factory=set)  # dotted names holding a batch of one sample (GG303)
    shaped: dict = field(default_factory=dict)  # dotted name -> shape expressions of the tensor it holds (GG301)
    filled: dict = field(default_factory=dict)  # dotted name -> parameters item-assigned into it (``X[i] = p[i].s``)
    batch_sources: set = field(default_factory=set)  # names bound to a batching data source (samples.BATCH_SOURCES)
    batches: set = field(default_factory=set)  # names a loop over a batching data source binds: one batch each (GG303)
    targets: set = field(default_factory=set)  # names a ``for`` of this body binds as its target (GG306)
    node: ast.AST | None = None  # the ``def`` being read (its parameters' defaults and calls give counts)
    drew: bool | str = False  # the body drew a random minibatch (what is made of it is one too, GG303); samples.HELPER_DRAW: through a helper
    pending_eager: list | None = None  # TF 2 decisions made when the body has been read (EagerReader._defer)
